"""The operator's Celery side: one reconcile chain per HyperPodPyTorchJob (elastic/operator.py).
A job's steps run on its owner's queue (`HyperPodJob.node`: its containers live on that engine);
a message that reached another worker is handed on unprocessed. After each step, every other
live node holding (or, before the step, holding) replicas of the job is sent its share on its
own queue (`sync_elastic_replicas`: elastic/members.py). A job whose node was declared lost has no such
queue any more (nobody consumes it): its steps run on whichever live worker takes the message,
which moves the job off the lost node (operator._on_node_lost)."""
import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError

from capacity import nodes
from elastic import members, operator, planner, reaper, replicas
from elastic.models import FINISHED_PHASES, ElasticReplica, HyperPodJob, JobPhase
from reconcile import leases

log = logging.getLogger(__name__)


@shared_task(name="elastic.tasks.reconcile_hyperpod_job", acks_late=True, ignore_result=True)
def reconcile_hyperpod_job(pk: int) -> None:
    node = _home_of(pk)
    if node is not None and node != nodes.local_name():
        _enqueue(pk, 0, node)
        return
    before = _member_nodes(pk)
    delay = operator.reconcile(pk)
    for member in sorted(before | _member_nodes(pk)):
        sync_elastic_replicas.apply_async((pk,), queue=nodes.queue_name(member))
    if delay is not None:
        _enqueue(pk, delay, _home_of(pk))


@shared_task(name="elastic.tasks.sync_elastic_replicas", acks_late=True, ignore_result=True)
def sync_elastic_replicas(pk: int) -> None:
    """A node's share of a job it holds replicas of without owning it; only its own queue carries it."""
    members.sync(pk)


def _member_nodes(pk: int) -> set[str]:
    """The live nodes other than this one that hold replicas of the job."""
    held = ElasticReplica.objects.filter(job_id=pk, node__lost_at__isnull=True)
    return set(held.values_list("node__name", flat=True)) - {nodes.local_name()}


def nudge(pk: int) -> None:
    """Have the operator look at the job once the caller's transaction commits (a submission, a
    deletion, a preemption cutting its target). The change is committed: when the broker cannot
    take the message, the sweeper finds the job overdue later, so the request still succeeds."""
    transaction.on_commit(lambda: _enqueue_now(pk))


def nudge_for_container(arn: str) -> None:
    """A replica of the job exited (reconcile/container_events.py): the operator looks at it now,
    on the job's node."""
    for pk in leases.due_now(HyperPodJob.objects.filter(uid=replicas.uid_of(arn))):
        _enqueue(pk, 0, _home_of(pk))


def nudge_for_capacity(node_names: set[str]) -> None:
    """GPUs were freed (capacity/freed.py): every job that may take them is looked at now, on its
    node: a pending one, one short of replicas after a stop, a running one (it may grow). Any
    node's GPUs may concern any of them (worlds may span nodes), and a look that finds nothing
    to do is cheap. Exited jobs are not told: what they hold is being freed."""
    short = Q(phase=JobPhase.STOPPING, short_since__isnull=False)
    may_take = Q(phase__in=(JobPhase.PENDING, JobPhase.RUNNING)) | short
    waiting = HyperPodJob.objects.filter(may_take, deletion_requested_at__isnull=True)
    for pk in leases.due_now(waiting):
        _enqueue(pk, 0, _home_of(pk))


def nudge_for_registered_node() -> None:
    """This node registered (a new one, or one back after it was lost): its GPUs are capacity
    the waiting jobs may take. A broker not answering yet delays them only to their next poll."""
    try:
        nudge_for_capacity({nodes.local_name()})
    except OperationalError as exc:
        log.warning("could not tell the jobs that node %s registered (%s)", nodes.local_name(), exc)


def _enqueue_now(pk: int) -> None:
    try:
        reconcile_hyperpod_job.delay(pk)
    except OperationalError as exc:
        log.warning("could not enqueue HyperPodPyTorchJob %s (%s); the sweeper will pick it up", pk, exc)


def sweep_hyperpod_jobs() -> None:
    """The sweeper's share: re-enqueue every job whose next look is overdue and that nobody holds
    (a lost message, a killed worker), finished ones waiting out a TTL included, and at once every
    job with a replica on a node declared lost; then remove what no job owns any more."""
    now = timezone.now()
    slack = timedelta(seconds=max(2.0, 2 * settings.SAGEPORT_POLL_INTERVAL_SECONDS))
    overdue = (
        HyperPodJob.objects.filter(
            Q(next_check_at__lt=now - slack)
            | Q(next_check_at__isnull=True)
            & (~Q(phase__in=FINISHED_PHASES) | Q(deletion_requested_at__isnull=False))
        )
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
    )
    for pk in leases.due_now(overdue):
        reconcile_hyperpod_job.delay(pk)
    _move_off_lost_nodes(now)
    reaper.reap_elastic_orphans()


def _move_off_lost_nodes(now) -> None:
    """Declare silent nodes lost (the training sweep does too: whichever runs first), then look
    now at every job with a world on one, unless a step holds it (a worker killed mid-step: the
    overdue sweep sends it once the claim lapses)."""
    nodes.declare_lost()
    stranded = (
        HyperPodJob.objects.filter(phase__in=planner.ACTIVE_PHASES, replicas__node__lost_at__isnull=False)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
        .distinct()
    )
    for pk in leases.due_now(stranded):
        reconcile_hyperpod_job.delay(pk)


def _home_of(pk: int) -> str | None:
    """The node whose queue runs the job's steps: its node, unless that was declared lost (then
    None: any worker)."""
    home = HyperPodJob.objects.filter(pk=pk).values_list("node__name", "node__lost_at").first()
    if home is None or home[1] is not None:
        return None
    return home[0]


def _enqueue(pk: int, countdown: float, node: str | None) -> None:
    routing = {"queue": nodes.queue_name(node)} if node else {}
    reconcile_hyperpod_job.apply_async((pk,), countdown=countdown, **routing)
