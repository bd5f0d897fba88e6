"""Processing jobs as the database records them: the database is the truth, the worker converges."""
from django.db import models

from reconcile.leases import LeasedRow


class ProcessingJobStatus(models.TextChoices):
    """`ProcessingJobStatus`: the values of the API (and of `StatusEquals`)."""

    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"
    STOPPING = "Stopping"
    STOPPED = "Stopped"


class Phase(models.TextChoices):
    """Where an InProgress (or Stopping) job is in its life: SageMaker shows no secondary status
    for processing, so this is the reconciler's own, shown only in the console."""

    STARTING = "Starting"
    PENDING = "Pending"
    DOWNLOADING = "Downloading"
    PROCESSING = "Processing"
    UPLOADING = "Uploading"
    STOPPING = "Stopping"
    ENDED = "Ended"


TERMINAL_STATUSES = frozenset(
    {ProcessingJobStatus.COMPLETED, ProcessingJobStatus.FAILED, ProcessingJobStatus.STOPPED}
)


class ProcessingJob(LeasedRow):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    processing_job_name = models.CharField(max_length=63)
    # Lower-cased name inside, as SageMaker does; unique, so names are unique case-insensitively.
    processing_job_arn = models.CharField(max_length=256, unique=True)
    # The validated CreateProcessingJob request (without Tags), defaults filled, as Describe shows it.
    request = models.JSONField()
    tags = models.JSONField(default=list)

    processing_job_status = models.CharField(max_length=16, default=ProcessingJobStatus.IN_PROGRESS)
    phase = models.CharField(max_length=16, default=Phase.STARTING)
    status_message = models.CharField(max_length=1024, blank=True, default="")
    exit_message = models.CharField(max_length=1024, blank=True, default="")
    failure_reason = models.CharField(max_length=1024, blank=True, default="")
    creation_time = models.DateTimeField()
    last_modified_time = models.DateTimeField()
    processing_start_time = models.DateTimeField(null=True)
    processing_end_time = models.DateTimeField(null=True)
    # When the current phase began: its deadline is timed from here (jobs/deadlines.py).
    phase_started_at = models.DateTimeField(null=True)

    # What the containers' ending decided, applied once the outputs are uploaded: the final status
    # (Completed | Failed | Stopped) and, for Failed, its reason.
    outcome = models.CharField(max_length=16, blank=True, default="")
    stop_signalled_at = models.DateTimeField(null=True)
    # When a container still running at the end of the stop's grace was first sent SIGKILL.
    stop_killed_at = models.DateTimeField(null=True)
    # Files of Continuous outputs already uploaded while the job ran: {"<output>/<host>/<path>":
    # [size, mtime_ns]}, so that only new or changed files go up at each look.
    continuous_uploads = models.JSONField(default=dict)

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.processing_job_name

    @property
    def is_terminal(self) -> bool:
        return self.processing_job_status in TERMINAL_STATUSES
