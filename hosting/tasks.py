"""Celery tasks for endpoints: one reconcile chain per endpoint, and the sweeper's share.

A step acts on the containers of the node it runs on (hosting/reconciler.py), so the chain goes
round the live nodes that hold the endpoint's containers (`placement.rotation`), one node's
queue after the other; while the endpoint has no container, any worker takes the step."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from capacity import nodes
from hosting import async_tasks, placement, reaper, reconciler
from hosting.models import Endpoint, EndpointStatus
from reconcile import leases


# The name is the task's name before issue 8 moved it: queued messages use it (those carry no
# node, and run where they land).
@shared_task(name="workers.hosting_tasks.reconcile_endpoint", acks_late=True, ignore_result=True)
def reconcile_endpoint(endpoint_id: int, node: str | None = None) -> None:
    """One step of an endpoint on `node`; a message that reached another node's worker is handed
    on, unless that node is no longer alive (then this node takes the step)."""
    if not Endpoint.objects.filter(pk=endpoint_id).exists():
        return  # deleted
    here = nodes.local_name()
    if node is not None and node != here and node in nodes.live_names():
        _send(endpoint_id, node)
        return
    delay = reconciler.reconcile(endpoint_id)
    if delay is not None:
        enqueue(endpoint_id, after=here, countdown=delay)


def enqueue(endpoint_id: int, after: str = "", countdown: float = 0.0) -> None:
    """Send the endpoint's next step to the node after `after` in its rotation (the first node
    when `after` is empty; any worker when it holds no container)."""
    rotation = placement.rotation(endpoint_id)
    later = [name for name in rotation if name > after]
    _send(endpoint_id, (later or rotation or [None])[0], countdown)


def _send(endpoint_id: int, node: str | None, countdown: float = 0.0) -> None:
    queue = {"queue": nodes.queue_name(node)} if node else {}
    reconcile_endpoint.apply_async((endpoint_id, node), countdown=countdown, **queue)


def nudge_for_container(arn: str) -> None:
    """A serving container of this node died or its health changed (reconcile/container_events.py):
    this node's step of the endpoint runs now."""
    for endpoint_id in leases.due_now(Endpoint.objects.filter(endpoint_arn=arn)):
        _send(endpoint_id, nodes.local_name())


def sweep_hosting() -> None:
    """The sweeper's share (registered in HostingConfig.ready)."""
    sweep_endpoints()
    reaper.reap_serving_orphans()
    async_tasks.sweep_async()


def sweep_endpoints() -> None:
    """Re-enqueue every endpoint whose next look is overdue and that nobody holds (a lost
    message, a killed worker, a message left in a lost node's queue). Failed endpoints have
    nothing left to run."""
    now = timezone.now()
    slack = timedelta(seconds=max(2.0, 2 * settings.SAGEPORT_HEALTH_CHECK_INTERVAL_SECONDS))
    overdue = (
        Endpoint.objects.exclude(endpoint_status=EndpointStatus.FAILED, deployments__isnull=True)
        .filter(Q(next_check_at__isnull=True) | Q(next_check_at__lt=now - slack))
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
        .distinct()
    )
    for endpoint_id in leases.due_now(overdue):
        enqueue(endpoint_id)
