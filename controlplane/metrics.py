"""`GET /metrics`: Prometheus text format, unauthenticated (expose the API port's /metrics only to
your scraper: it carries counts, account ids, endpoint and variant names, never request data).

Events (API requests, invocations, reconcile steps) are counters and histograms declared where
they happen; under gunicorn and Celery every process writes them to files in
`PROMETHEUS_MULTIPROC_DIR` (the stack sets it for all its children, on one machine) and this view
adds them up. State (jobs by status, serving containers by status, node capacity and GPU
allocation, queue depth) is read from the database and Redis at scrape time, so it is never stale
and no process has to keep it."""

import os

import redis
from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from capacity.models import GpuAllocation, Node, Placement
from capacity.nodes import queue_name
from hosting.models import ServingContainer
from training.models import TrainingJob

DEFAULT_QUEUE = "celery"
QUEUE_TIMEOUT_SECONDS = 0.25


class StateCollector:
    """Gauges computed from the database (and Redis) when scraped."""

    def collect(self):
        yield _counted(
            "sageport_training_jobs", "Training jobs by status", ["status", "secondary_status"],
            TrainingJob.objects.values_list("training_job_status", "secondary_status"),
        )
        yield _counted(
            "sageport_serving_containers", "Serving containers by variant status", ["status"],
            ServingContainer.objects.values_list("status"),
        )
        yield _counted(
            "sageport_training_containers", "Training instances placed (one container each) by node",
            ["node"], Placement.objects.values_list("node__name"),
        )
        yield from _nodes()
        yield _queue_depths()


def _counted(name: str, documentation: str, labels: list[str], rows) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=labels)
    grouped = rows.order_by().annotate(n=Count("pk"))
    for *values, n in grouped:
        family.add_metric([str(value) for value in values], n)
    return family


def _nodes():
    cpus = GaugeMetricFamily("sageport_node_cpus", "CPUs of each registered node", labels=["node"])
    memory = GaugeMetricFamily("sageport_node_memory_bytes", "Memory of each node", labels=["node"])
    gpus = GaugeMetricFamily("sageport_node_gpus", "GPUs of each node", labels=["node"])
    allocated = GaugeMetricFamily(
        "sageport_node_gpus_allocated",
        "GPUs held by a training instance or serving container",
        labels=["node"],
    )
    held = dict(GpuAllocation.objects.values_list("node__name").order_by().annotate(n=Count("pk")))
    for node in Node.objects.filter(lost_at__isnull=True):
        cpus.add_metric([node.name], node.cpus)
        memory.add_metric([node.name], node.memory_bytes)
        gpus.add_metric([node.name], len(node.gpus))
        allocated.add_metric([node.name], held.get(node.name, 0))
    return cpus, memory, gpus, allocated


def _queue_depths() -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        "sageport_queue_depth", "Messages waiting in each Celery queue", labels=["queue"]
    )
    queues = [DEFAULT_QUEUE, *(queue_name(name) for name in Node.objects.values_list("name", flat=True))]
    client = redis.Redis.from_url(
        settings.CELERY_BROKER_URL,
        socket_timeout=QUEUE_TIMEOUT_SECONDS,
        socket_connect_timeout=QUEUE_TIMEOUT_SECONDS,
    )
    try:
        pipeline = client.pipeline(transaction=False)
        for queue in queues:
            pipeline.llen(queue)
        for queue, depth in zip(queues, pipeline.execute(), strict=True):
            family.add_metric([queue], depth)
    except redis.RedisError:  # the broker's own health is /readyz's business: no depth then
        pass
    finally:
        client.close()
    return family


_STATE = CollectorRegistry()
_STATE.register(StateCollector())


def _events() -> CollectorRegistry:
    """This process's own metrics, or every process's when they share a multiprocess directory."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    return registry


def metrics(request: HttpRequest) -> HttpResponse:
    body = generate_latest(_events()) + generate_latest(_STATE)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
