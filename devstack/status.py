"""`sageport stack status`: whether each of the stack's services answers, and what the stack holds.
Every probe is bounded (about a second), so a hung service reads as "not answering", never as a
status command that hangs."""

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Q

from capacity.models import Node
from devstack.stack import http_answers, redis_answers
from hosting.models import Endpoint, EndpointStatus, ServingContainer
from training.models import TrainingJob, TrainingJobStatus

WORKER_PING_SECONDS = 1.0


@dataclass(frozen=True)
class Service:
    name: str
    where: str
    answers: bool


def services() -> list[Service]:
    probes = [
        ("api", settings.SAGEPORT_API_URL, lambda url: http_answers(f"{url}/healthz")),
        ("data plane", settings.SAGEPORT_RUNTIME_URL, lambda url: http_answers(f"{url}/")),
        ("s3", settings.SAGEPORT_S3_ENDPOINT_URL, lambda url: http_answers(f"{url}/")),
        ("redis", settings.CELERY_BROKER_URL, redis_answers),
    ]
    found = [Service(name, where, probe(where)) for name, where, probe in probes]
    workers = _workers() if found[-1].answers else []
    found.append(Service("workers", ", ".join(workers) or "none answered", bool(workers)))
    return found


def nodes() -> dict[str, int]:
    """How many nodes are ready and how many lost."""
    counts = Node.objects.aggregate(all=Count("pk"), lost=Count("pk", filter=Q(lost_at__isnull=False)))
    return {"ready": counts["all"] - counts["lost"], "lost": counts["lost"]}


def work() -> dict[str, int]:
    """What runs now, all accounts together."""
    return {
        "training jobs in progress": TrainingJob.objects.filter(
            training_job_status=TrainingJobStatus.IN_PROGRESS
        ).count(),
        "endpoints in service": Endpoint.objects.filter(endpoint_status=EndpointStatus.IN_SERVICE).count(),
        "serving containers": ServingContainer.objects.count(),
    }


def _workers() -> list[str]:
    """The Celery workers that answer a ping (names like sageport-worker@host)."""
    from controlplane.celery import app

    try:
        replies = app.control.ping(timeout=WORKER_PING_SECONDS)
    except OSError:
        return []
    return sorted(name for reply in replies for name in reply)
