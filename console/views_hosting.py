"""Endpoints, endpoint configs and models: lists and pages, and the endpoint's actions (weights
and capacities, another config, delete) as the API's own operations."""

import time

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from capacity.gpus import gpu_ids
from console import invocation_charts, live, s3_links, sorting
from console.actions import perform
from console.addresses import address, resource_view
from console.deletion import delete
from console.viewer import Viewer, console_view
from hosting import async_queue, presenters, serverless
from hosting.models import Endpoint, EndpointConfig, EndpointStatus, SageMakerModel, ServingContainer
from hosting.runtime_api.contract import ENDPOINT_LOG_GROUP
from protocol.listing import filtered_and_sorted

PAGE_SIZE = 50
# The statuses that change by themselves: the list keeps refreshing while one is shown.
CHANGING = (EndpointStatus.CREATING, EndpointStatus.UPDATING, EndpointStatus.DELETING)
HISTORY_SHOWN = 100  # the newest deployment steps on an endpoint's page


def listing_page(
    viewer: Viewer, request: HttpRequest, model, operation: str, name_field: str, status_field: str = ""
):
    """A page of `model`'s rows, filtered and sorted with the List `operation`'s semantics (newest
    first unless a column heading asked otherwise)."""
    params = {}
    name = request.GET.get("name", "").strip()[:63]
    if name:
        params["NameContains"] = name
    status = request.GET.get("status", "")
    if status_field and status in EndpointStatus.values:
        params["StatusEquals"] = status
    sort_fields = {"Name": name_field, "CreationTime": "creation_time"}
    if status_field:
        sort_fields["Status"] = status_field
    visible = viewer.visible(model.objects.all())
    if model is Endpoint:  # an inference component's runner shows as the component
        visible = visible.filter(runs_component__isnull=True)
    rows = filtered_and_sorted(
        visible,
        {**sorting.chosen(request, sort_fields), **params},
        operation=operation,
        name_field=name_field,
        sort_fields=sort_fields,
        status_field=status_field,
    )
    return Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))


@console_view
def endpoint_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    page = listing_page(viewer, request, Endpoint, "ListEndpoints", "endpoint_name", "endpoint_status")
    context = {
        "page": page,
        "statuses": EndpointStatus.values,
        "status": request.GET.get("status", ""),
        "name": request.GET.get("name", ""),
    }
    return render(request, "console/endpoints.html", context)


@console_view
def endpoint_rows(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    """The list's rows, re-rendered for the page's live refresh (a deleted endpoint leaves it)."""
    page = listing_page(viewer, request, Endpoint, "ListEndpoints", "endpoint_name", "endpoint_status")
    filters = {"name": request.GET.get("name", ""), "status": request.GET.get("status", "")}
    html = render_to_string("console/_endpoint_rows.html", {"page": page, **filters}, request)
    changing = sum(1 for endpoint in page if endpoint.endpoint_status in CHANGING)
    return JsonResponse({"html": html, "running": changing})


def _fleet(endpoint: Endpoint) -> list[dict]:
    """Every deployment (active, pending, retiring) with its containers, health and GPUs."""
    deployments = endpoint.deployments.prefetch_related("containers__gpus")
    return [
        {
            "deployment": deployment,
            "containers": [
                {"row": container, "gpus": ", ".join(gpu_ids(container)) or "none"}
                for container in deployment.containers.all()
            ],
        }
        for deployment in deployments
    ]


def _endpoint_context(endpoint: Endpoint) -> dict:
    configs = EndpointConfig.objects.filter(account_id=endpoint.account_id, region=endpoint.region)
    return {
        "configs": configs.order_by("-creation_time")[:200],
        "endpoint": endpoint,
        "described": presenters.describe_endpoint(endpoint),
        "fleet": _fleet(endpoint),
        "history": presenters.deployment_history(endpoint, HISTORY_SHOWN),
        "async_backlog": async_queue.backlog_size(endpoint),
        "serverless": serverless.fleet_now(endpoint),
        "config": configs.filter(endpoint_config_name=endpoint.endpoint_config_name).first(),
        "nodes": _nodes(endpoint),
    }


def _nodes(endpoint: Endpoint) -> list[str]:
    """The nodes its containers are placed on."""
    placed = ServingContainer.objects.filter(deployment__endpoint=endpoint)
    return sorted(set(placed.values_list("node__name", flat=True)))


@resource_view(Endpoint)
def endpoint_detail(request: HttpRequest, viewer: Viewer, endpoint: Endpoint) -> HttpResponse:
    context = {**_endpoint_context(endpoint), "metric_names": invocation_charts.TITLES}
    return render(request, "console/endpoint.html", context)


@resource_view(Endpoint)
def endpoint_live(request: HttpRequest, viewer: Viewer, endpoint: Endpoint) -> HttpResponse:
    context = _endpoint_context(endpoint)
    return JsonResponse(
        {
            "terminal": False,
            # The forms are rendered again only when the status changes (never under the typing hand).
            "state": endpoint.endpoint_status,
            "actions_html": render_to_string("console/_endpoint_actions.html", context, request),
            "status_html": render_to_string("console/_endpoint_status.html", context, request),
            "fleet_html": render_to_string("console/_endpoint_fleet.html", context, request),
            "history_html": render_to_string("console/_endpoint_history.html", context, request),
            "streams": live.streams(viewer.context_for(endpoint), _log_group(endpoint), ""),
        }
    )


def _log_group(endpoint: Endpoint) -> str:
    return ENDPOINT_LOG_GROUP.format(name=endpoint.endpoint_name)


@resource_view(Endpoint)
def endpoint_logs(request: HttpRequest, viewer: Viewer, endpoint: Endpoint) -> HttpResponse:
    return live.log_lines(
        viewer.context_for(endpoint),
        _log_group(endpoint),
        "",
        request.GET,
    )


@resource_view(Endpoint)
def endpoint_metrics(request: HttpRequest, viewer: Viewer, endpoint: Endpoint) -> HttpResponse:
    now_ms = int(time.time() * 1000)
    return JsonResponse({"series": invocation_charts.series(endpoint, now_ms)})


def _number(text: str, kind):
    """The form's value as a number; a value that is not one goes to the API's validation as it
    is, which answers with its own message."""
    try:
        return kind(text)
    except ValueError:
        return text


def _act(request: HttpRequest, viewer: Viewer, endpoint: Endpoint, operation: str, params: dict, done: str):
    outcome = perform(
        viewer.context_for(endpoint), operation, {"EndpointName": endpoint.endpoint_name, **params}
    )
    if outcome.ok:
        messages.success(request, done)
    else:
        messages.error(request, outcome.error)
    return redirect(address(viewer, endpoint, "console:endpoint"))


@resource_view(Endpoint)
@require_POST
def endpoint_weights(request: HttpRequest, viewer: Viewer, endpoint: Endpoint) -> HttpResponse:
    changes = [
        {
            "VariantName": variant,
            "DesiredWeight": _number(request.POST.get(f"weight-{variant}", ""), float),
            "DesiredInstanceCount": _number(request.POST.get(f"count-{variant}", ""), int),
        }
        for variant in request.POST.getlist("variant")
    ]
    return _act(
        request,
        viewer,
        endpoint,
        "UpdateEndpointWeightsAndCapacities",
        {"DesiredWeightsAndCapacities": changes},
        "Updating weights and instance counts.",
    )


@resource_view(Endpoint)
@require_POST
def endpoint_update(request: HttpRequest, viewer: Viewer, endpoint: Endpoint) -> HttpResponse:
    params = {"EndpointConfigName": request.POST.get("config", "")}
    if request.POST.get("retain"):
        params["RetainAllVariantProperties"] = True
    return _act(
        request,
        viewer,
        endpoint,
        "UpdateEndpoint",
        params,
        f"Deploying {params['EndpointConfigName']} (blue/green).",
    )


@resource_view(Endpoint)
@require_POST
def endpoint_delete(request: HttpRequest, viewer: Viewer, endpoint: Endpoint) -> HttpResponse:
    return delete(
        request, viewer, endpoint, ("DeleteEndpoint", {"EndpointName": endpoint.endpoint_name}),
        ("console:endpoint", "console:endpoints"),
        f"Deleting {endpoint.endpoint_name}: its containers are drained, then stopped.",
    )


@resource_view(SageMakerModel)
@require_POST
def model_delete(request: HttpRequest, viewer: Viewer, model: SageMakerModel) -> HttpResponse:
    return delete(
        request, viewer, model, ("DeleteModel", {"ModelName": model.model_name}),
        ("console:model", "console:models"),
        f"Deleted {model.model_name} (endpoints already running it keep their containers).",
    )


@resource_view(EndpointConfig)
@require_POST
def config_delete(request: HttpRequest, viewer: Viewer, config: EndpointConfig) -> HttpResponse:
    return delete(
        request, viewer, config,
        ("DeleteEndpointConfig", {"EndpointConfigName": config.endpoint_config_name}),
        ("console:endpoint-config", "console:endpoint-configs"),
        f"Deleted {config.endpoint_config_name} (endpoints deployed from it keep running).",
    )


@console_view
def config_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    page = listing_page(viewer, request, EndpointConfig, "ListEndpointConfigs", "endpoint_config_name")
    return render(
        request, "console/endpoint_configs.html", {"page": page, "name": request.GET.get("name", "")}
    )


@resource_view(EndpointConfig)
def config_detail(request: HttpRequest, viewer: Viewer, config: EndpointConfig) -> HttpResponse:
    models = SageMakerModel.objects.filter(account_id=config.account_id, region=config.region)
    by_name = {model.model_name: model for model in models}
    variants = [
        # None: the model was deleted, or the variant names none (an endpoint for inference components)
        {"spec": variant, "model": by_name.get(variant.get("ModelName"))}
        for variant in config.request["ProductionVariants"]
    ]
    context = {
        "config": config,
        "described": presenters.describe_endpoint_config(config),
        "variants": variants,
    }
    return render(request, "console/endpoint_config.html", context)


@console_view
def model_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    page = listing_page(viewer, request, SageMakerModel, "ListModels", "model_name")
    return render(request, "console/models.html", {"page": page, "name": request.GET.get("name", "")})


@resource_view(SageMakerModel)
def model_detail(request: HttpRequest, viewer: Viewer, model: SageMakerModel) -> HttpResponse:
    described = presenters.describe_model(model)
    containers = [described["PrimaryContainer"]] if "PrimaryContainer" in described else []
    containers += described.get("Containers", [])
    configs = EndpointConfig.objects.filter(account_id=model.account_id, region=model.region)
    context = {
        "model": model,
        "described": described,
        "containers": [_container_facts(container) for container in containers],
        "configs": [
            config for config in configs.order_by("endpoint_config_name")
            if any(v.get("ModelName") == model.model_name for v in config.request["ProductionVariants"])
        ],
    }
    return render(request, "console/model.html", context)


def _container_facts(container: dict) -> dict:
    """A container of DescribeModel with its model data linked to the console's S3 pages."""
    source = container.get("ModelDataSource", {}).get("S3DataSource", {})
    data = container.get("ModelDataUrl") or source.get("S3Uri")
    return {
        "image": container.get("Image", ""),
        "mode": container.get("Mode", "SingleModel"),
        "data": data,
        "data_link": s3_links.href(data) if data and data.startswith("s3://") else None,
        "environment": sorted(container.get("Environment", {}).items()),
    }
