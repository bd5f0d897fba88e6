"""Celery tasks of tuning jobs: short, idempotent, ids in; each reconcile re-enqueues itself while
needed. A tuning job runs no container itself, so any worker takes its steps."""
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from reconcile import leases
from tuning import reconciler
from tuning.models import TERMINAL_STATUSES, HyperParameterTuningJob


@shared_task(name="tuning.tasks.reconcile_tuning_job", acks_late=True, ignore_result=True)
def reconcile_tuning_job(job_id: int) -> None:
    delay = reconciler.reconcile(job_id)
    if delay is not None:
        reconcile_tuning_job.apply_async((job_id,), countdown=delay)


def sweep_tuning() -> None:
    """The sweeper's share: re-enqueue every tuning job whose next look is overdue and that nobody
    holds (a lost message, a killed worker)."""
    now = timezone.now()
    slack = timedelta(seconds=max(2.0, 2 * settings.SAGEPORT_POLL_INTERVAL_SECONDS))
    overdue = (
        HyperParameterTuningJob.objects.exclude(status__in=TERMINAL_STATUSES)
        .filter(Q(next_check_at__isnull=True) | Q(next_check_at__lt=now - slack))
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
    )
    for job_id in leases.due_now(overdue):
        reconcile_tuning_job.delay(job_id)
