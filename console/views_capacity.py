"""Capacity, for operators: the nodes, what holds each GPU, and the queue of Pending jobs with
what each waits for."""

from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from capacity.models import GpuAllocation, Node, Placement
from console.viewer import Viewer, operator_view
from hosting.models import Endpoint, InferenceComponent
from training.models import SecondaryStatus, TrainingJob


def _holders(node: Node) -> dict[str, tuple[str, Model, str]]:
    """Device id → who holds it, in words."""
    held = {}
    allocations = GpuAllocation.objects.filter(node=node).select_related(
        "placement__job",
        "placement__processing_job",
        "placement__transform_job",
        "container__deployment__endpoint",
    )
    for allocation in allocations:
        if allocation.placement is not None:
            page, job, name, host = _instance(allocation.placement)
            held[allocation.device_id] = (page, job, f"{name} ({host})")
        else:
            container = allocation.container
            endpoint = container.deployment.endpoint
            label = f"{endpoint.endpoint_name} / {container.variant_name}"
            held[allocation.device_id] = (*_serving(endpoint), label)
    return held


def _serving(endpoint: Endpoint) -> tuple[str, Model]:
    """The page of what an endpoint's container serves: an inference component's runner is shown
    as the component (its endpoint has no page of its own)."""
    component = InferenceComponent.objects.filter(runner=endpoint).first()
    return ("console:inference-component", component) if component else ("console:endpoint", endpoint)


def _instance(placement: Placement) -> tuple[str, Model, str, str]:
    """(its job's page, the job, the job's name, the host) of a training, processing or
    transform instance."""
    if placement.processing_job is not None:
        job = placement.processing_job
        return "console:processing-job", job, job.processing_job_name, placement.host
    if placement.transform_job is not None:
        job = placement.transform_job
        return "console:transform-job", job, job.transform_job_name, placement.host
    return "console:training-job", placement.job, placement.job.training_job_name, placement.host


def _node_row(node: Node, now) -> dict:
    holders = _holders(node)
    return {
        "node": node,
        "memory_gib": node.memory_bytes / 2**30,
        "heartbeat_age": (now - node.heartbeat_at).total_seconds(),
        "gpus": [{"gpu": gpu, "holder": holders.get(gpu["id"])} for gpu in node.gpus],
        "instances": [
            _instance(placement)
            for placement in Placement.objects.filter(node=node)
            .select_related("job", "processing_job", "transform_job")
            .order_by("job_id", "processing_job_id", "transform_job_id", "host")
        ],
    }


def _waiting(job: TrainingJob) -> str:
    current = job.transitions.last()
    return current.status_message if current else ""


@operator_view
def capacity(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    now = timezone.now()
    pending = TrainingJob.objects.filter(secondary_status=SecondaryStatus.PENDING).order_by(
        "creation_time", "pk"
    )
    context = {
        "nodes": [_node_row(node, now) for node in Node.objects.order_by("name")],
        "pending": [{"job": job, "waiting_for": _waiting(job)} for job in pending[:500]],
    }
    return render(request, "console/capacity.html", context)
