"""Celery tasks for endpoints: one reconcile chain per endpoint, and the sweeper's share.

Every step runs on the queue of the endpoint's hosting node (`Endpoint.hosting_node`, the API's
host): its containers are reached on that host's 127.0.0.1, so no other node may run them."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from capacity import nodes
from hosting import reaper, reconciler
from hosting.models import Endpoint, EndpointStatus


# The name is the task's name before issue 8 moved it: queued messages use it.
@shared_task(name="workers.hosting_tasks.reconcile_endpoint", acks_late=True, ignore_result=True)
def reconcile_endpoint(endpoint_id: int) -> None:
    """One step of an endpoint; a message that reached another node's worker is handed on."""
    node = Endpoint.objects.filter(pk=endpoint_id).values_list("hosting_node", flat=True).first()
    if node is None:
        return  # deleted
    if node != nodes.local_name():
        enqueue(endpoint_id, node)
        return
    delay = reconciler.reconcile(endpoint_id)
    if delay is not None:
        enqueue(endpoint_id, node, countdown=delay)


def enqueue(endpoint_id: int, node: str, countdown: float = 0.0) -> None:
    reconcile_endpoint.apply_async((endpoint_id,), countdown=countdown, queue=nodes.queue_name(node))


def sweep_hosting() -> None:
    """The sweeper's share (registered in HostingConfig.ready)."""
    sweep_endpoints()
    reaper.reap_serving_orphans()


def sweep_endpoints() -> None:
    """Re-enqueue every endpoint whose next look is overdue and that nobody holds (a lost
    message or a killed worker). Failed endpoints have nothing left to run."""
    now = timezone.now()
    slack = timedelta(seconds=max(2.0, 2 * settings.SAGEPORT_HEALTH_CHECK_INTERVAL_SECONDS))
    overdue = (
        Endpoint.objects.exclude(endpoint_status=EndpointStatus.FAILED, deployments__isnull=True)
        .filter(Q(next_check_at__isnull=True) | Q(next_check_at__lt=now - slack))
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
        .distinct()
    )
    for endpoint_id, node in overdue.values_list("pk", "hosting_node"):
        Endpoint.objects.filter(pk=endpoint_id).update(next_check_at=now)
        enqueue(endpoint_id, node)
