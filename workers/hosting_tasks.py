"""Celery tasks for endpoints: one reconcile chain per endpoint, and the sweeper's share."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from endpoints.models import Endpoint, EndpointStatus
from workers import hosting


@shared_task(acks_late=True, ignore_result=True)
def reconcile_endpoint(endpoint_id: int) -> None:
    delay = hosting.reconcile(endpoint_id)
    if delay is not None:
        reconcile_endpoint.apply_async((endpoint_id,), countdown=delay)


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
    for endpoint_id in overdue.values_list("pk", flat=True):
        Endpoint.objects.filter(pk=endpoint_id).update(next_check_at=now)
        reconcile_endpoint.delay(endpoint_id)
