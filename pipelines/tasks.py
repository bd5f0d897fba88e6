"""Celery tasks of pipeline executions: short, idempotent, ids in; each reconcile re-enqueues
itself while needed. An execution runs no container itself, so any worker takes its looks."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from pipelines import reconciler
from pipelines.models import TERMINAL_STATUSES, PipelineExecution
from reconcile import leases


@shared_task(name="pipelines.tasks.reconcile_pipeline_execution", acks_late=True, ignore_result=True)
def reconcile_pipeline_execution(execution_id: int) -> None:
    delay = reconciler.reconcile(execution_id)
    if delay is not None:
        reconcile_pipeline_execution.apply_async((execution_id,), countdown=delay)


def nudge_for_resource(name: str) -> None:
    """A job ended (reconcile/endings.py): the running executions one of whose steps it is look at
    it now instead of at their next poll. Their resources are all named `pipelines-...`."""
    if not name.startswith("pipelines-"):
        return
    running = PipelineExecution.objects.exclude(status__in=TERMINAL_STATUSES)
    waiting = running.filter(steps__resource_name=name)
    for execution_id in leases.due_now(waiting):
        reconcile_pipeline_execution.delay(execution_id)


def sweep_pipeline_executions() -> None:
    """The sweeper's share: re-enqueue every execution whose next look is overdue and that nobody
    holds (a lost message, a killed worker)."""
    now = timezone.now()
    slack = timedelta(seconds=max(2.0, 2 * settings.SAGEPORT_POLL_INTERVAL_SECONDS))
    overdue = (
        PipelineExecution.objects.exclude(status__in=TERMINAL_STATUSES)
        .filter(Q(next_check_at__isnull=True) | Q(next_check_at__lt=now - slack))
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
    )
    for execution_id in leases.due_now(overdue):
        reconcile_pipeline_execution.delay(execution_id)
