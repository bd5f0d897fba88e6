"""How long each phase of a training job may take, so that no job stays in one forever
(jobs/deadlines.py: the rule every container job shares).

Training's phases and their settings, and when each began (its status history; Starting from
its placement). The rest is bounded elsewhere: Training by MaxRuntimeInSeconds, and Pending
(waiting for capacity) is never timed out, since SageMaker queues such jobs too: the start work
is timed from the moment the job got its capacity."""
from datetime import datetime

from capacity.models import Placement
from jobs.deadlines import Phase
from jobs.deadlines import overdue as past_deadline
from training import transitions as t
from training.models import TrainingJob

_STARTING = Phase("Preparing the instances for training", ("SAGEPORT_STARTING_TIMEOUT_SECONDS",))
_PHASES = {
    t.STARTING: _STARTING,
    t.PENDING: _STARTING,  # only once placed: see _began
    # Mostly the final checkpoint sync of the lost attempt: an upload.
    t.RESTARTING: Phase("Restarting the training job", ("SAGEPORT_UPLOADING_TIMEOUT_SECONDS",)),
    t.DOWNLOADING: Phase("Downloading input data", ("SAGEPORT_DOWNLOADING_TIMEOUT_SECONDS",)),
    t.UPLOADING: Phase("Uploading the training artifacts", ("SAGEPORT_UPLOADING_TIMEOUT_SECONDS",)),
    # SIGTERM, SIGKILL after the grace period, then the artifacts are uploaded.
    t.STOPPING_STATE: Phase(
        "Stopping the training job", ("SAGEPORT_STOP_GRACE_SECONDS", "SAGEPORT_UPLOADING_TIMEOUT_SECONDS")
    ),
}


def overdue(job: TrainingJob, now: datetime) -> str | None:
    """The FailureReason when `job` has been in its current phase longer than allowed."""
    phase = _PHASES.get(t.state_of(job))
    if phase is None:
        return None
    return past_deadline(phase, _began(job), now)


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
