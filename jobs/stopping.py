"""The stop sequence of a container job's instances, as SageMaker stops a job: SIGTERM once, so
that the algorithm can save its work, then SIGKILL once the grace period is over. A container
created but never started (its worker died between the two) is removed: there is nothing to stop.

The moment of the SIGTERM is the feature's to record (a column of its row), since the grace is
counted from it across reconcile steps, worker restarts and nodes."""
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from django.utils import timezone

from runtime.base import ContainerRuntime, ContainerState


def drain(
    runtime: ContainerRuntime,
    here: Iterable[ContainerState],
    *,
    any_running: bool,
    signalled_at: datetime | None,
    grace_seconds: float,
    record_signalled: Callable[[datetime], None],
    record_killed: Callable[[datetime], None] | None = None,
) -> bool:
    """One step of the sequence for the containers of this engine (`here`); True once nothing of
    the job runs (`any_running`: on any engine, when instances span nodes). `record_signalled(now)`
    is told when the SIGTERM is sent, once; `record_killed(now)` each time a container still
    running when the grace is over is sent SIGKILL (so that the job can say it was killed)."""
    here = list(here)
    for state in here:
        if state.never_started:
            runtime.remove(state.name)
    if not any_running:
        return True
    now = timezone.now()
    if signalled_at is None:
        signal_running(runtime, here, "SIGTERM")
        record_signalled(now)
    elif grace_over(signalled_at, grace_seconds, now):
        if signal_running(runtime, here, "SIGKILL") and record_killed is not None:
            record_killed(now)
    return False


def grace_over(signalled_at: datetime, grace_seconds: float, now: datetime) -> bool:
    return now - signalled_at >= timedelta(seconds=grace_seconds)


def signal_running(runtime: ContainerRuntime, states: Iterable[ContainerState], signal: str) -> int:
    """How many running containers were sent `signal`."""
    running = [state for state in states if state.running]
    for state in running:
        runtime.signal(state.name, signal)
    return len(running)
