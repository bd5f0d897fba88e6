"""Celery tasks: short, idempotent, ids in; each reconcile re-enqueues itself while needed."""
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from jobs.models import TERMINAL_STATUSES, TrainingJob
from workers import reaper, training


@shared_task(acks_late=True, ignore_result=True)
def reconcile_training_job(job_id: int) -> None:
    delay = training.reconcile(job_id)
    if delay is not None:
        reconcile_training_job.apply_async((job_id,), countdown=delay)


@shared_task(ignore_result=True)
def sweep() -> None:
    """Re-enqueue every job whose next look is overdue and that nobody holds (a lost message or a
    killed worker), then remove containers, networks and workspaces nothing owns any more."""
    now = timezone.now()
    slack = timedelta(seconds=max(2.0, 2 * settings.SAGEPORT_POLL_INTERVAL_SECONDS))
    overdue = (
        TrainingJob.objects.exclude(training_job_status__in=TERMINAL_STATUSES)
        .filter(Q(next_check_at__isnull=True) | Q(next_check_at__lt=now - slack))
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
    )
    for job_id in overdue.values_list("pk", flat=True):
        TrainingJob.objects.filter(pk=job_id).update(next_check_at=now)
        reconcile_training_job.delay(job_id)
    reaper.reap_training_orphans()
