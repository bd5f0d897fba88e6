"""The single writer of a training job's status.

Every change goes through `transition()`: a compare-and-set on the (status, secondary status)
pair the caller last saw, so the API and the worker never overwrite each other, plus a history
row that renders `SecondaryStatusTransitions`. Terminal states absorb: they have no way out."""

import logging

from django.db import transaction
from django.utils import timezone

from protocol.prepared import PreparedQuery
from reconcile import endings
from training.models import SecondaryStatus, SecondaryStatusTransition, TrainingJob
from training.models import TrainingJobStatus as Status

log = logging.getLogger(__name__)

IN_PROGRESS = Status.IN_PROGRESS

STARTING = (IN_PROGRESS, SecondaryStatus.STARTING)
PENDING = (IN_PROGRESS, SecondaryStatus.PENDING)  # waiting for capacity (GPUs) on a worker node
RESTARTING = (IN_PROGRESS, SecondaryStatus.RESTARTING)  # an infrastructure fault, per RetryStrategy
DOWNLOADING = (IN_PROGRESS, SecondaryStatus.DOWNLOADING)
TRAINING = (IN_PROGRESS, SecondaryStatus.TRAINING)
UPLOADING = (IN_PROGRESS, SecondaryStatus.UPLOADING)
STOPPING_STATE = (Status.STOPPING, SecondaryStatus.STOPPING)
COMPLETED = (Status.COMPLETED, SecondaryStatus.COMPLETED)
FAILED = (Status.FAILED, SecondaryStatus.FAILED)
STOPPED = (Status.STOPPED, SecondaryStatus.STOPPED)
MAX_RUNTIME_EXCEEDED = (Status.STOPPED, SecondaryStatus.MAX_RUNTIME_EXCEEDED)

ALLOWED: dict[tuple[str, str], frozenset[tuple[str, str]]] = {
    STARTING: frozenset({PENDING, DOWNLOADING, FAILED, STOPPING_STATE}),
    PENDING: frozenset({DOWNLOADING, FAILED, STOPPING_STATE}),
    # Failed or Restarting from here on when the node or a container is lost.
    DOWNLOADING: frozenset({TRAINING, FAILED, STOPPING_STATE, RESTARTING}),
    TRAINING: frozenset({UPLOADING, STOPPING_STATE, FAILED, RESTARTING}),
    UPLOADING: frozenset({COMPLETED, FAILED, STOPPING_STATE, RESTARTING}),
    RESTARTING: frozenset({STARTING, FAILED, STOPPING_STATE}),
    # Failed when a container had already failed, or the artifacts could not be uploaded.
    STOPPING_STATE: frozenset({STOPPED, MAX_RUNTIME_EXCEEDED, FAILED}),
}

# The texts the real service shows for each secondary status.
STATUS_MESSAGES = {
    SecondaryStatus.STARTING: "Preparing the instances for training",
    SecondaryStatus.PENDING: "Waiting for capacity",
    SecondaryStatus.RESTARTING: "Restarting the training job after an infrastructure fault",
    SecondaryStatus.DOWNLOADING: "Downloading input data",
    SecondaryStatus.TRAINING: "Training image download completed. Training in progress.",
    SecondaryStatus.UPLOADING: "Uploading generated training model",
    SecondaryStatus.COMPLETED: "Training job completed",
    SecondaryStatus.FAILED: "Training job failed",
    SecondaryStatus.STOPPING: "Stopping the training job",
    SecondaryStatus.STOPPED: "Training job stopped",
    SecondaryStatus.MAX_RUNTIME_EXCEEDED: "Training job stopped: MaxRuntimeInSeconds was exceeded",
}


class IllegalTransition(Exception):
    pass


# Read by every DescribeTrainingJob: compiled once (protocol/prepared.py), in the model's order.
_history_of_job = PreparedQuery(lambda job_id: SecondaryStatusTransition.objects.filter(job_id=job_id), int)


def history(job: TrainingJob) -> list[SecondaryStatusTransition]:
    """The job's status transitions, oldest first: what SecondaryStatusTransitions shows."""
    return _history_of_job(job.pk)


def state_of(job: TrainingJob) -> tuple[str, str]:
    return (job.training_job_status, job.secondary_status)


def transition(job: TrainingJob, target: tuple[str, str], message: str | None = None, **fields) -> bool:
    """Move `job` from the state it was loaded in to `target`; False if someone moved it first.

    `fields` are other columns written in the same update (e.g. failure_reason). On success the
    in-memory `job` reflects the new row."""
    source = state_of(job)
    if target not in ALLOWED.get(source, frozenset()):
        raise IllegalTransition(f"{job.training_job_name}: {source} -> {target}")
    now = timezone.now()
    status, secondary = target
    with transaction.atomic():
        updated = TrainingJob.objects.filter(
            pk=job.pk, training_job_status=source[0], secondary_status=source[1]
        ).update(training_job_status=status, secondary_status=secondary, last_modified_time=now, **fields)
        if not updated:
            return False
        if secondary != source[1]:
            SecondaryStatusTransition.objects.filter(job=job, end_time__isnull=True).update(end_time=now)
            end_time = now if target in TERMINAL_TARGETS else None
            SecondaryStatusTransition.objects.create(
                job=job,
                status=secondary,
                start_time=now,
                end_time=end_time,
                status_message=message or STATUS_MESSAGES.get(secondary, ""),
            )
    job.training_job_status, job.secondary_status, job.last_modified_time = status, secondary, now
    # One line per change, naming the job (the log's resource is the job being reconciled).
    log.info("training job %s: %s/%s -> %s/%s", job.training_job_name, *source, status, secondary)
    if target in TERMINAL_TARGETS:
        endings.ended(job.training_job_name)
    for name, value in fields.items():
        setattr(job, name, value)
    return True


def set_status_message(job: TrainingJob, message: str) -> None:
    """Say what the current secondary status is waiting for (e.g. "Waiting for S3: ..."): the
    StatusMessage of the job's open history row. The next transition opens a row with its own."""
    SecondaryStatusTransition.objects.filter(job=job, end_time__isnull=True).update(
        status_message=message[:1024]
    )


TERMINAL_TARGETS = frozenset({COMPLETED, FAILED, STOPPED, MAX_RUNTIME_EXCEEDED})


def record_creation(job: TrainingJob) -> None:
    """The first history row, written in the same transaction as the job itself."""
    SecondaryStatusTransition.objects.create(
        job=job, status=STARTING[1], start_time=job.creation_time, status_message=STATUS_MESSAGES[STARTING[1]]
    )
