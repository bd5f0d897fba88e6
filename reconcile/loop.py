"""The skeleton every reconciler shares: load the row, ignore duplicate messages, claim it, run
one step, and release it with the time of its next look.

A step is `step(row, lease_token) -> seconds until the next look | None (no more looks)`. Errors
never escape, and each kind is treated as what it is:

- transient (the container engine unreachable or refusing an operation for now, e.g. a network
  still in use; the object store throttling, failing with a 5xx or unreachable): retried with
  exponential backoff, at most `SAGEPORT_TRANSIENT_RETRY_ATTEMPTS` times in a row (the phase
  deadlines of a training job usually end it sooner); each failed attempt is told to the
  feature's `waiting(row, message)`, so that API users see what is awaited ("Waiting for the
  Docker engine: ...") in the resource's status message;
- permanent (the store refusing for good, an archive that cannot be made, the engine refusing to
  create a container or lacking its image): the resource fails at once with the error as its
  reason;
- anything else is a bug: retried `BUG_ATTEMPTS` times with backoff (it may have been a passing
  condition), then the resource fails visibly with an `InternalServerError` reason; the log has
  the traceback.

A nudge that arrives while a step holds the row (a container exit seen by the events watcher,
an API action) makes that step's next look immediate (`leases.release`), whatever the step
asked for.

The count of consecutive failed attempts lives on the row (`failed_attempts`), so a worker restart
neither resets nor loses it; a step that succeeds sets it back to zero. The sweeper covers a
message lost on the way.

Each step is timed into `sageport_reconcile_step_seconds{kind, outcome}` (outcome: ok, transient,
permanent, bug); log lines written during a step name the resource (`log_context.about`)."""
import logging
import time
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db.models import Model
from django.utils import timezone
from prometheus_client import Histogram

from reconcile import leases, log_context
from runtime.base import ContainerStartFailed, NoSuchImage, RuntimeError_
from storage.archives import ArchiveError
from storage.s3 import StorageError

log = logging.getLogger(__name__)

# A message that arrives this much before the row's next check is a duplicate of a live chain.
EARLY_TOLERANCE = timedelta(seconds=0.25)
BUG_ATTEMPTS = 5
NOW = 0.0
MAX_BACKOFF_SECONDS = 60.0

Step = Callable[[Model, str], float | None]
# Fails the resource with the reason; returns the next look like a step does.
GiveUp = Callable[[Model, str], float | None]
# Records what a transient failure makes the resource wait for (a status message).
Waiting = Callable[[Model, str], None]

STEP_SECONDS = Histogram(
    "sageport_reconcile_step_seconds",
    "Duration of one reconcile step, by resource kind and outcome (ok, transient, permanent, bug)",
    ["kind", "outcome"],
)


def reconcile_once(
    model: type[Model],
    pk: int,
    step: Step,
    give_up: GiveUp,
    finished: Callable[[Model], bool] = lambda row: False,
    waiting: Waiting | None = None,
) -> float | None:
    row = model.objects.filter(pk=pk).first()
    if row is None or finished(row):
        return None
    if row.next_check_at and row.next_check_at > timezone.now() + EARLY_TOLERANCE:
        return None
    token = leases.claim(model, pk)
    if token is None:
        return None  # another worker holds it and will schedule the next look
    with log_context.about(model.__name__, str(row), getattr(row, "account_id", "")):
        return _run_step(model, row, token, step, give_up, finished, waiting)


def _run_step(model, row, token, step, give_up, finished, waiting) -> float | None:
    attempts = row.failed_attempts + 1  # if this one fails too
    delay, failed_attempts, outcome = backoff_seconds(attempts), attempts, "ok"
    started = time.perf_counter()
    try:
        row.refresh_from_db()  # as claimed: a nudge from now on moves its next_check_at
        delay, failed_attempts = (None if finished(row) else step(row, token)), 0
    except Exception as exc:  # sorted below: nothing may escape the loop
        outcome = _kind_of(exc)
        reason = _failure_reason(model, row, exc, attempts)
        if reason is not None:
            delay, failed_attempts = _give_up(give_up, row, reason), 0
        elif outcome == "transient" and waiting is not None:
            _tell_waiting(waiting, row, exc)
    finally:
        if leases.release(model, row.pk, token, delay, failed_attempts, row.next_check_at):
            delay = NOW  # nudged during the step: what the nudge announced is looked at at once
        STEP_SECONDS.labels(model.__name__, outcome).observe(time.perf_counter() - started)
    return delay


def backoff_seconds(attempt: int) -> float:
    """The pause before retry `attempt` (1, 2, ...): the poll interval, doubled each time, capped."""
    base = settings.SAGEPORT_POLL_INTERVAL_SECONDS
    return min(base * 2 ** min(attempt - 1, 16), MAX_BACKOFF_SECONDS)


_PERMANENT_ENGINE_ERRORS = (ContainerStartFailed, NoSuchImage)


def is_transient(exc: Exception) -> bool:
    """The engine unreachable, or refusing an operation for now (RuntimeError_ itself: a removal
    racing another, a network still in use), or the store unreachable or overloaded."""
    if isinstance(exc, RuntimeError_):
        return not isinstance(exc, _PERMANENT_ENGINE_ERRORS)
    return isinstance(exc, StorageError) and exc.transient


def is_permanent(exc: Exception) -> bool:
    """The platform's own errors that no retry can cure (the store refusing for good, an archive
    that cannot be made, the engine refusing to create a container or lacking an image)."""
    return isinstance(exc, (*_PERMANENT_ENGINE_ERRORS, ArchiveError)) or (
        isinstance(exc, StorageError) and not exc.transient
    )


def _kind_of(exc: Exception) -> str:
    return "transient" if is_transient(exc) else "permanent" if is_permanent(exc) else "bug"


def waiting_message(exc: Exception) -> str:
    """What a resource waits for after a transient failure, in words for its status message."""
    part = "the Docker engine" if isinstance(exc, RuntimeError_) else "S3"
    return f"Waiting for {part}: {exc}"[:1024]


def _tell_waiting(waiting: Waiting, row: Model, exc: Exception) -> None:
    try:
        waiting(row, waiting_message(exc))
    except Exception:  # a status message must never turn a retry into a failure
        log.exception("%s: could not record the status message", row)


def _failure_reason(model: type[Model], row: Model, exc: Exception, attempts: int) -> str | None:
    """The FailureReason when the resource must fail now; None when the step is to be retried."""
    name = f"{model.__name__} {row}"
    if is_transient(exc):
        limit = settings.SAGEPORT_TRANSIENT_RETRY_ATTEMPTS
        log.warning("%s: transient error (attempt %d of %d): %s", name, attempts, limit, exc)
        return f"InternalServerError: {exc}" if attempts >= limit else None
    if is_permanent(exc):
        log.warning("%s: permanent error: %s", name, exc)
        prefix = "InternalServerError" if isinstance(exc, RuntimeError_) else "ClientError"
        return f"{prefix}: {exc}"
    log.exception("%s: reconcile step failed (attempt %d of %d)", name, attempts, BUG_ATTEMPTS)
    if attempts < BUG_ATTEMPTS:
        return None
    return f"InternalServerError: an internal error stopped the work ({type(exc).__name__}: {exc})"


def _give_up(give_up: GiveUp, row: Model, reason: str) -> float | None:
    try:
        return give_up(row, reason[:1024])
    except Exception:  # the row is looked at again later
        log.exception("%s: could not record the failure %r", row, reason)
        return MAX_BACKOFF_SECONDS
