"""The single writer of a processing job's status.

Every change goes through `transition()`: a compare-and-set on the (status, phase) pair the caller
last saw, so that the API (StopProcessingJob) and the worker never overwrite each other. Terminal
states absorb: they have no way out."""
import logging

from django.utils import timezone

from processing.models import Phase, ProcessingJob
from processing.models import ProcessingJobStatus as Status
from reconcile import endings

log = logging.getLogger(__name__)

STARTING = (Status.IN_PROGRESS, Phase.STARTING)
PENDING = (Status.IN_PROGRESS, Phase.PENDING)  # waiting for capacity (GPUs) on a worker node
DOWNLOADING = (Status.IN_PROGRESS, Phase.DOWNLOADING)
PROCESSING = (Status.IN_PROGRESS, Phase.PROCESSING)
UPLOADING = (Status.IN_PROGRESS, Phase.UPLOADING)
STOPPING = (Status.STOPPING, Phase.STOPPING)
COMPLETED = (Status.COMPLETED, Phase.ENDED)
FAILED = (Status.FAILED, Phase.ENDED)
STOPPED = (Status.STOPPED, Phase.ENDED)

ALLOWED: dict[tuple[str, str], frozenset[tuple[str, str]]] = {
    STARTING: frozenset({PENDING, DOWNLOADING, FAILED, STOPPING}),
    PENDING: frozenset({DOWNLOADING, FAILED, STOPPING}),
    DOWNLOADING: frozenset({PROCESSING, FAILED, STOPPING}),
    PROCESSING: frozenset({UPLOADING, FAILED, STOPPING}),
    UPLOADING: frozenset({COMPLETED, FAILED, STOPPING}),
    # Failed when a container had already failed, or the outputs could not be uploaded.
    STOPPING: frozenset({STOPPED, FAILED}),
}
TERMINAL = frozenset({COMPLETED, FAILED, STOPPED})


class IllegalTransition(Exception):
    pass


def state_of(job: ProcessingJob) -> tuple[str, str]:
    return (job.processing_job_status, job.phase)


def transition(job: ProcessingJob, target: tuple[str, str], message: str = "", **fields) -> bool:
    """Move `job` from the state it was loaded in to `target`; False if someone moved it first.
    `fields`: other columns written in the same update. On success the in-memory `job` follows."""
    source = state_of(job)
    if target not in ALLOWED.get(source, frozenset()):
        raise IllegalTransition(f"{job.processing_job_name}: {source} -> {target}")
    now = timezone.now()
    status, phase = target
    changes = dict(
        processing_job_status=status, phase=phase, last_modified_time=now, phase_started_at=now,
        status_message=message[:1024], **fields,
    )
    if target in TERMINAL:
        changes.setdefault("processing_end_time", now)
    updated = ProcessingJob.objects.filter(
        pk=job.pk, processing_job_status=source[0], phase=source[1]
    ).update(**changes)
    if not updated:
        return False
    for name, value in changes.items():
        setattr(job, name, value)
    log.info("processing job %s: %s/%s -> %s/%s", job.processing_job_name, *source, status, phase)
    if target in TERMINAL:
        endings.ended(job.processing_job_name)
    return True


def record_decision(job: ProcessingJob, **fields) -> None:
    """Columns that are no status change (the SIGTERM's moment, an outcome decided while
    stopping), written only if the job is still in the state it was loaded in."""
    where = {"processing_job_status": job.processing_job_status, "phase": job.phase}
    ProcessingJob.objects.filter(pk=job.pk, **where).update(**fields)
    for name, value in fields.items():
        setattr(job, name, value)


def set_status_message(job: ProcessingJob, message: str) -> None:
    """Say what the current phase waits for ("Waiting for S3: ..."), shown by the console."""
    ProcessingJob.objects.filter(pk=job.pk).update(status_message=message[:1024])
    job.status_message = message[:1024]
