"""Inference components: the list and a component's page (its DescribeInferenceComponent, its
copies with their instance, node and GPUs, and its deployment history)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from capacity.gpus import gpu_ids
from console.addresses import resource_view
from console.deletion import delete
from console.viewer import Viewer, console_view
from console.views_hosting import listing_page
from hosting import component_operations, presenters
from hosting.models import ComponentCopy, InferenceComponent

HISTORY_SHOWN = 100


@console_view
def component_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    page = listing_page(
        viewer, request, InferenceComponent, "ListInferenceComponents", "inference_component_name"
    )
    return render(
        request, "console/inference_components.html", {"page": page, "name": request.GET.get("name", "")}
    )


@resource_view(InferenceComponent)
def component_detail(request: HttpRequest, viewer: Viewer, component: InferenceComponent) -> HttpResponse:
    copies = (
        ComponentCopy.objects.filter(container__deployment__endpoint=component.runner)
        .select_related("container__node", "container__deployment")
        .order_by("container__deployment", "container__ordinal")
    )
    context = {
        "component": component,
        "described": component_operations.describe(component),
        "copies": [
            {"copy": copy, "row": copy.container, "gpus": ", ".join(gpu_ids(copy.container)) or "none"}
            for copy in copies
        ],
        "history": presenters.deployment_history(component.runner, HISTORY_SHOWN),
    }
    return render(request, "console/inference_component.html", context)


@resource_view(InferenceComponent)
@require_POST
def component_delete(request: HttpRequest, viewer: Viewer, component: InferenceComponent) -> HttpResponse:
    name = component.inference_component_name
    return delete(
        request, viewer, component, ("DeleteInferenceComponent", {"InferenceComponentName": name}),
        ("console:inference-component", "console:inference-components"),
        f"Deleting {name}: its copies are drained, then stopped (the endpoint keeps serving the others).",
    )
