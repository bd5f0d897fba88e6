"""Exclusive, expiring claims on a resource row, so that one reconcile runs at a time per resource.

Duplicate messages (Redis redelivery, the sweeper, an API nudge) are harmless: a task that cannot
claim the row simply leaves. A worker killed mid-step holds its claim only until it expires; then
the sweeper hands the resource to another worker. The row needs `lease_token`,
`lease_expires_at` and `next_check_at` columns: derive its model from `LeasedRow`.

A nudge (an API action, a container event, the sweeper) makes the next look due now
(`due_now`) and then sends a message. A nudge that comes while a step holds the row is not lost:
its message cannot claim the row, but `release` sees the moved `next_check_at` and tells the
step's caller to look again at once."""

import threading
import uuid
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Model, Q, QuerySet
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
    model: type[Model],
    pk: int,
    token: str,
    next_check_in: float | None,
    failed_attempts: int = 0,
    due_when_claimed: datetime | None = None,
) -> bool:
    """Give the row back and record when it wants its next look (None: it needs none) and how
    many steps in a row have failed. True when the row was nudged while held (its `next_check_at`
    is no longer `due_when_claimed`, the value the step started from): its next look is then due
    now, and the caller sends it."""
    now = timezone.now()
    with transaction.atomic():  # the nudge's UPDATE comes wholly before or after this
        held = model.objects.select_for_update().filter(pk=pk, lease_token=token)
        current = held.values("next_check_at").first()
        nudged = current is not None and current["next_check_at"] != due_when_claimed
        if nudged:
            next_check_at = now
        else:
            next_check_at = None if next_check_in is None else now + timedelta(seconds=next_check_in)
        held.update(
            lease_token="", lease_expires_at=None, next_check_at=next_check_at,
            failed_attempts=failed_attempts,
        )
    return nudged


def due_now(rows: QuerySet) -> list[int]:
    """Make the next look of `rows` due now, so that the message the caller sends next is not
    dropped as an early duplicate (reconcile.loop) and a step holding one of them looks again as
    soon as it ends (`release`). Returns their primary keys, for the caller's messages."""
    pks = list(rows.values_list("pk", flat=True))
    if pks:
        rows.model.objects.filter(pk__in=pks).update(next_check_at=timezone.now())
    return pks


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
