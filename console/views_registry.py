"""The model registry: model package groups (newest first, filtered by name as
ListModelPackageGroups filters), a group's page with its versions, model packages (filtered by
approval status as ListModelPackages filters), a package's page (what DescribeModelPackage
answers), and Approve / Reject (the API's UpdateModelPackage)."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console.actions import perform
from console.addresses import address, resource_view
from console.deletion import delete
from console.viewer import Viewer, console_view
from modelregistry import presenters
from modelregistry.models import ModelApprovalStatus, ModelPackage, ModelPackageGroup
from protocol.listing import NEWEST_FIRST, filtered_and_sorted

PAGE_SIZE = 50
SORT_FIELDS = {"CreationTime": "creation_time"}


def _name_filter(request: HttpRequest) -> dict:
    name = request.GET.get("name", "").strip()[:63]
    return {"NameContains": name} if name else {}


@console_view
def group_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    rows = filtered_and_sorted(
        viewer.visible(ModelPackageGroup.objects.all()),
        {**NEWEST_FIRST, **_name_filter(request)},
        operation="ListModelPackageGroups",
        name_field="model_package_group_name",
        sort_fields=SORT_FIELDS,
    )
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "name": request.GET.get("name", "")}
    return render(request, "console/model_package_groups.html", context)


@resource_view(ModelPackageGroup)
def group_detail(request: HttpRequest, viewer: Viewer, group: ModelPackageGroup) -> HttpResponse:
    context = {
        "group": group,
        "described": presenters.describe_group(group),
        "versions": group.packages.order_by("-model_package_version"),
    }
    return render(request, "console/model_package_group.html", context)


@console_view
def package_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    rows = viewer.visible(ModelPackage.objects.select_related("group"))
    status = request.GET.get("status", "")
    if status in ModelApprovalStatus.values:
        rows = rows.filter(model_approval_status=status)
    rows = filtered_and_sorted(
        rows,
        {**NEWEST_FIRST, **_name_filter(request)},
        operation="ListModelPackages",
        name_field="model_package_name",
        sort_fields=SORT_FIELDS,
    )
    context = {
        "page": Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page")),
        "statuses": ModelApprovalStatus.values,
        "status": status,
        "name": request.GET.get("name", ""),
    }
    return render(request, "console/model_packages.html", context)


@resource_view(ModelPackage)
def package_detail(request: HttpRequest, viewer: Viewer, package: ModelPackage) -> HttpResponse:
    context = {
        "package": package,
        "described": presenters.describe_package(package),
        "decisions": [ModelApprovalStatus.APPROVED, ModelApprovalStatus.REJECTED],
    }
    return render(request, "console/model_package.html", context)


@resource_view(ModelPackage)
@require_POST
def package_approval(request: HttpRequest, viewer: Viewer, package: ModelPackage) -> HttpResponse:
    params = {
        "ModelPackageArn": package.model_package_arn,
        "ModelApprovalStatus": request.POST.get("status", ""),
    }
    description = request.POST.get("description", "").strip()
    if description:
        params["ApprovalDescription"] = description
    outcome = perform(viewer.context_for(package), "UpdateModelPackage", params)
    if outcome.ok:
        messages.success(request, f"{package.model_package_arn} is {params['ModelApprovalStatus']}.")
    else:
        messages.error(request, outcome.error)
    return redirect(address(viewer, package, "console:model-package"))


@resource_view(ModelPackage)
@require_POST
def package_delete(request: HttpRequest, viewer: Viewer, package: ModelPackage) -> HttpResponse:
    return delete(
        request, viewer, package, ("DeleteModelPackage", {"ModelPackageName": package.model_package_arn}),
        ("console:model-package", "console:model-packages"),
        f"Deleted {package.model_package_arn} (models created from it keep running).",
    )


@resource_view(ModelPackageGroup)
@require_POST
def group_delete(request: HttpRequest, viewer: Viewer, group: ModelPackageGroup) -> HttpResponse:
    params = {"ModelPackageGroupName": group.model_package_group_name}
    return delete(
        request, viewer, group, ("DeleteModelPackageGroup", params),
        ("console:model-package-group", "console:model-package-groups"),
        f"Deleted the model package group {group.model_package_group_name}.",
    )
