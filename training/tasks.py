"""Celery tasks of training jobs: short, idempotent, ids in; each reconcile re-enqueues itself
while needed. Task names are explicit and keep their names from before issue 8 (queued messages
name them)."""
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from capacity import nodes
from capacity.models import Placement
from reconcile import leases
from training import member, reaper, scheduler, spans
from training import reconciler as training
from training.models import TERMINAL_STATUSES, TrainingJob


# The name is the task's name before issue 8 moved it: queued messages use it.
@shared_task(name="workers.tasks.reconcile_training_job", acks_late=True, ignore_result=True)
def reconcile_training_job(job_id: int) -> None:
    """One step of a job. A placed job's containers live on its node's engine, so its steps run
    on that node's own queue; a message that reached another worker is handed on unprocessed."""
    node = scheduler.node_of(job_id)
    if node is not None and node != nodes.local_name():
        _enqueue(job_id, 0, node)
        return
    members = spans.member_nodes(job_id)  # before the step, which may release the placements
    delay = training.reconcile(job_id)
    for member_node in sorted(set(members) | set(spans.member_nodes(job_id))):
        sync_training_instances.apply_async((job_id,), queue=nodes.queue_name(member_node))
    if delay is not None:
        _enqueue(job_id, delay, scheduler.node_of(job_id))


@shared_task(name="training.tasks.sync_training_instances", acks_late=True, ignore_result=True)
def sync_training_instances(job_id: int) -> None:
    """A member node's share of a job spanning nodes (training/member.py), after each step of
    the job's node; only the member's own queue carries it."""
    member.sync(job_id)


def _enqueue(job_id: int, countdown: float, node: str | None) -> None:
    routing = {"queue": nodes.queue_name(node)} if node else {}
    reconcile_training_job.apply_async((job_id,), countdown=countdown, **routing)


def nudge(jobs: QuerySet) -> None:
    """Have these jobs looked at now, each on its node's queue (any worker's while unplaced)."""
    for job_id in leases.due_now(jobs):
        _enqueue(job_id, 0, scheduler.node_of(job_id))


def nudge_for_container(arn: str) -> None:
    """A container of the job changed (reconcile/container_events.py): look at it now."""
    nudge(TrainingJob.objects.filter(training_job_arn=arn).exclude(training_job_status__in=TERMINAL_STATUSES))


def sweep_training() -> None:
    """The sweeper's share (registered in TrainingConfig.ready): re-enqueue every job whose next
    look is overdue and that nobody holds (a lost message or a killed worker), handle lost nodes,
    then remove containers, networks and workspaces nothing owns any more."""
    now = timezone.now()
    slack = timedelta(seconds=max(2.0, 2 * settings.SAGEPORT_POLL_INTERVAL_SECONDS))
    overdue = (
        TrainingJob.objects.exclude(training_job_status__in=TERMINAL_STATUSES)
        .filter(Q(next_check_at__isnull=True) | Q(next_check_at__lt=now - slack))
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
    )
    nudge(overdue)
    _handle_lost_nodes()
    scheduler.release_finished()
    reaper.reap_training_orphans()


def _handle_lost_nodes() -> None:
    """Declare silent nodes lost, then fail or restart every job still placed on a lost node."""
    nodes.declare_lost()
    on_lost = TrainingJob.objects.filter(placements__node__lost_at__isnull=False).distinct()
    for job_id in on_lost.values_list("pk", flat=True):
        if _move_off_lost_node(job_id):
            reconcile_training_job.delay(job_id)


def _move_off_lost_node(job_id: int) -> bool:
    """Restart or fail the job over its lost node, once. Sweeps overlap (any worker takes the
    next one while a slow one runs), so the job and its placements are read again under the job's
    row lock: a sweep that lost the race finds the job already moved off (its placements
    released, or new ones on live nodes) and leaves it."""
    with transaction.atomic():
        job = TrainingJob.objects.select_for_update().filter(pk=job_id).first()
        on_lost = job.placements.filter(node__lost_at__isnull=False) if job else Placement.objects.none()
        lost = on_lost.order_by("host").select_related("node").first()
        if lost is None:
            return False
        training.on_node_lost(job, lost.node.name)
    return True
