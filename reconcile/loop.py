"""The skeleton every reconciler shares: load the row, ignore duplicate messages, claim it, run
one step, and release it with the time of its next look.

A step is `step(row, lease_token) -> seconds until the next look | None (no more looks)`. Errors
never escape: the engine refusing for now, or a bug, leaves the row to be looked at again after
a short pause (and the sweeper covers a message lost on the way)."""
import logging
from collections.abc import Callable
from datetime import timedelta

from django.db.models import Model
from django.utils import timezone

from reconcile import leases
from runtime.base import RuntimeError_

log = logging.getLogger(__name__)

# A message that arrives this much before the row's next check is a duplicate of a live chain.
EARLY_TOLERANCE = timedelta(seconds=0.25)
RETRY_AFTER_ERROR_SECONDS = 5.0


def reconcile_once(
    model: type[Model],
    pk: int,
    step: Callable[[Model, str], float | None],
    finished: Callable[[Model], bool] = lambda row: False,
) -> float | None:
    row = model.objects.filter(pk=pk).first()
    if row is None or finished(row):
        return None
    if row.next_check_at and row.next_check_at > timezone.now() + EARLY_TOLERANCE:
        return None
    token = leases.claim(model, pk)
    if token is None:
        return None  # another worker holds it and will schedule the next look
    delay = RETRY_AFTER_ERROR_SECONDS
    try:
        row.refresh_from_db()
        delay = None if finished(row) else step(row, token)
    except RuntimeError_ as exc:  # engine unreachable or refusing for now: try again shortly
        log.warning("%s %s: container engine error (%s); retrying", model.__name__, row, exc)
    except Exception:
        log.exception("%s %s: reconcile step failed; retrying", model.__name__, row)
    finally:
        leases.release(model, pk, token, delay)
    return delay
