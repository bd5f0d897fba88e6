"""Exclusive, expiring claims on a resource row, so that one reconcile runs at a time per resource.

Duplicate messages (Redis redelivery, the sweeper, an API nudge) are harmless: a task that cannot
claim the row simply leaves. A worker killed mid-step holds its claim only until it expires; then
the sweeper hands the resource to another worker. The row needs `lease_token`,
`lease_expires_at` and `next_check_at` columns: derive its model from `LeasedRow`."""

import threading
import uuid
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import connection, models
from django.db.models import Model, Q
from django.utils import timezone


class LeasedRow(models.Model):
    """The columns a reconciled resource carries: when its next look is due, who holds it."""

    next_check_at = models.DateTimeField(null=True, db_index=True)
    lease_token = models.CharField(max_length=36, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True)
    # Consecutive reconcile steps that failed (reconcile/loop.py bounds their retries).
    failed_attempts = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True


def lease_duration() -> timedelta:
    return timedelta(seconds=settings.SAGEPORT_LEASE_SECONDS)


def claim(model: type[Model], pk: int) -> str | None:
    token = str(uuid.uuid4())
    now = timezone.now()
    claimed = (
        model.objects.filter(pk=pk)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
        .update(lease_token=token, lease_expires_at=now + lease_duration())
    )
    return token if claimed else None


def renew(model: type[Model], pk: int, token: str) -> None:
    """Called during long steps (staging, packing) so the claim does not lapse under them."""
    model.objects.filter(pk=pk, lease_token=token).update(lease_expires_at=timezone.now() + lease_duration())


def release(
    model: type[Model], pk: int, token: str, next_check_in: float | None, failed_attempts: int = 0
) -> None:
    """Give the row back and record when it wants its next look (None: it needs none) and how
    many steps in a row have failed."""
    next_check_at = None if next_check_in is None else timezone.now() + timedelta(seconds=next_check_in)
    model.objects.filter(pk=pk, lease_token=token).update(
        lease_token="", lease_expires_at=None, next_check_at=next_check_at, failed_attempts=failed_attempts
    )


@contextmanager
def kept_alive(model: type[Model], pk: int, token: str):
    """Renew the claim in the background while a long operation (pull, staging, packing) runs."""
    stop = threading.Event()

    def renew_until_stopped():
        try:
            while not stop.wait(lease_duration().total_seconds() / 3):
                renew(model, pk, token)
        finally:
            connection.close()  # this thread's own database connection

    renewer = threading.Thread(target=renew_until_stopped, name=f"lease-{pk}", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()
