"""Celery tasks of processing jobs: short, idempotent, ids in; each reconcile re-enqueues itself
while needed, on the queue of the node its containers run on."""
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from capacity import nodes
from capacity.models import Placement
from jobs import cleanup
from processing import placement
from processing import reconciler as processing
from processing.kind import PROCESSING
from processing.models import TERMINAL_STATUSES, ProcessingJob
from reconcile import leases
from runtime.docker import get_runtime


@shared_task(name="processing.tasks.reconcile_processing_job", acks_late=True, ignore_result=True)
def reconcile_processing_job(job_id: int) -> None:
    """One step of a job. A placed job's containers live on its node's engine, so its steps run
    on that node's own queue; a message that reached another worker is handed on unprocessed."""
    node = placement.node_of(job_id)
    if node is not None and node != nodes.local_name():
        _enqueue(job_id, 0, node)
        return
    delay = processing.reconcile(job_id)
    if delay is not None:
        _enqueue(job_id, delay, placement.node_of(job_id))


def _enqueue(job_id: int, countdown: float, node: str | None) -> None:
    routing = {"queue": nodes.queue_name(node)} if node else {}
    reconcile_processing_job.apply_async((job_id,), countdown=countdown, **routing)


def nudge(jobs: QuerySet) -> None:
    """Have these jobs looked at now, each on its node's queue (any worker's while unplaced)."""
    for job_id in leases.due_now(jobs):
        _enqueue(job_id, 0, placement.node_of(job_id))


def nudge_for_container(arn: str) -> None:
    """A container of the job changed (reconcile/container_events.py): look at it now."""
    live = ProcessingJob.objects.exclude(processing_job_status__in=TERMINAL_STATUSES)
    nudge(live.filter(processing_job_arn=arn))


def sweep_processing() -> None:
    """The sweeper's share: re-enqueue every job whose next look is overdue and that nobody holds
    (a lost message or a killed worker), free what ended jobs hold, and remove the containers,
    networks and workspaces of ended jobs from this node (jobs/cleanup.py)."""
    now = timezone.now()
    slack = timedelta(seconds=max(2.0, 2 * settings.SAGEPORT_POLL_INTERVAL_SECONDS))
    overdue = (
        ProcessingJob.objects.exclude(processing_job_status__in=TERMINAL_STATUSES)
        .filter(Q(next_check_at__isnull=True) | Q(next_check_at__lt=now - slack))
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
    )
    nudge(overdue)
    _handle_lost_nodes()
    placement.release_finished()
    runtime = get_runtime()
    found = cleanup.listed_leftovers(runtime, PROCESSING)  # listed before the live jobs are read
    live = ProcessingJob.objects.exclude(processing_job_status__in=TERMINAL_STATUSES)
    live_arns = set(live.values_list("processing_job_arn", flat=True))
    cleanup.reap(runtime, found, live_arns, set(live.values_list("pk", flat=True)))


def _handle_lost_nodes() -> None:
    """Declare silent nodes lost, then fail (or place again) every job still placed on one."""
    nodes.declare_lost()
    live = ProcessingJob.objects.exclude(processing_job_status__in=TERMINAL_STATUSES)
    on_lost = live.filter(placements__node__lost_at__isnull=False).distinct()
    for job_id in on_lost.values_list("pk", flat=True):
        if _move_off_lost_node(job_id):
            reconcile_processing_job.delay(job_id)


def _move_off_lost_node(job_id: int) -> bool:
    """Fail the job over its lost node, once: read again under the job's row lock, since sweeps
    overlap (any worker takes the next one while a slow one runs) and the one that lost the race
    finds the placements already released."""
    with transaction.atomic():
        job = ProcessingJob.objects.select_for_update().filter(pk=job_id).first()
        on_lost = job.placements.filter(node__lost_at__isnull=False) if job else Placement.objects.none()
        lost = on_lost.values_list("node__name", flat=True).first()
        if lost is None:
            return False
        processing.on_node_lost(job, lost)
    return True
