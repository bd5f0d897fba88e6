"""How long each phase of a training job may take, so that no job stays in one forever.

The phases where the platform does the work (preparing the start, staging the input, stopping,
uploading the artifacts) each have a deadline in the settings; a job past it fails with an
`InternalServerError` FailureReason that names the phase, whatever kept it there (an engine
that does not answer, storage that hangs, a bug that makes every step fail). The rest is
bounded elsewhere: Training by MaxRuntimeInSeconds, and Pending (waiting for capacity) is never
timed out, since SageMaker queues such jobs too: the start work is timed from the moment the job
got its capacity."""
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from capacity.models import Placement
from training import transitions as t
from training.models import TrainingJob


@dataclass(frozen=True)
class _Phase:
    work: str  # what did not finish, for the FailureReason
    settings_names: tuple[str, ...]  # the limit is their sum

    def limit_seconds(self) -> float:
        return sum(getattr(settings, name) for name in self.settings_names)


_STARTING = _Phase("Preparing the instances for training", ("SAGEPORT_STARTING_TIMEOUT_SECONDS",))
_PHASES = {
    t.STARTING: _STARTING,
    t.PENDING: _STARTING,  # only once placed: see _began
    # Mostly the final checkpoint sync of the lost attempt: an upload.
    t.RESTARTING: _Phase("Restarting the training job", ("SAGEPORT_UPLOADING_TIMEOUT_SECONDS",)),
    t.DOWNLOADING: _Phase("Downloading input data", ("SAGEPORT_DOWNLOADING_TIMEOUT_SECONDS",)),
    t.UPLOADING: _Phase("Uploading the training artifacts", ("SAGEPORT_UPLOADING_TIMEOUT_SECONDS",)),
    # SIGTERM, SIGKILL after the grace period, then the artifacts are uploaded.
    t.STOPPING_STATE: _Phase(
        "Stopping the training job", ("SAGEPORT_STOP_GRACE_SECONDS", "SAGEPORT_UPLOADING_TIMEOUT_SECONDS")
    ),
}


def overdue(job: TrainingJob, now: datetime) -> str | None:
    """The FailureReason when `job` has been in its current phase longer than allowed."""
    phase = _PHASES.get(t.state_of(job))
    began = _began(job) if phase is not None else None
    if began is None:
        return None
    limit = phase.limit_seconds()
    if now - began <= timedelta(seconds=limit):
        return None
    return f"InternalServerError: {phase.work} did not finish within {limit:g} seconds."


def _began(job: TrainingJob) -> datetime | None:
    if t.state_of(job) in (t.STARTING, t.PENDING):
        # No placement yet: nothing is being prepared (Pending is waiting for capacity).
        placements = Placement.objects.filter(job=job).order_by("placed_at")
        return placements.values_list("placed_at", flat=True).first()
    # The history row of the current status, written by the transition that entered it.
    return (
        job.transitions.filter(status=job.secondary_status, end_time__isnull=True)
        .order_by("-start_time")
        .values_list("start_time", flat=True)
        .first()
    )
