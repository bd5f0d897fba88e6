"""Training jobs as the database records them: the database is the truth, the worker converges."""

from django.db import models

from reconcile.leases import LeasedRow


class TrainingJobStatus(models.TextChoices):
    """`TrainingJobStatus`: the values of the API (and of `StatusEquals`)."""

    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"
    STOPPING = "Stopping"
    STOPPED = "Stopped"


class SecondaryStatus(models.TextChoices):
    """`SecondaryStatus`; the last four are also the values of `TrainingJob.outcome`."""

    STARTING = "Starting"
    PENDING = "Pending"
    RESTARTING = "Restarting"
    DOWNLOADING = "Downloading"
    TRAINING = "Training"
    UPLOADING = "Uploading"
    STOPPING = "Stopping"
    COMPLETED = "Completed"
    FAILED = "Failed"
    STOPPED = "Stopped"
    MAX_RUNTIME_EXCEEDED = "MaxRuntimeExceeded"


TERMINAL_STATUSES = frozenset(
    {TrainingJobStatus.COMPLETED, TrainingJobStatus.FAILED, TrainingJobStatus.STOPPED}
)


class TrainingJob(LeasedRow):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    training_job_name = models.CharField(max_length=63)
    # Lower-cased name inside, as SageMaker does; unique, so names are unique case-insensitively.
    training_job_arn = models.CharField(max_length=256, unique=True)
    # The validated CreateTrainingJob request (without Tags), stored as received.
    request = models.JSONField()
    tags = models.JSONField(default=list)

    training_job_status = models.CharField(max_length=16, default=TrainingJobStatus.IN_PROGRESS)
    secondary_status = models.CharField(max_length=32, default=SecondaryStatus.STARTING)
    failure_reason = models.CharField(max_length=1024, blank=True, default="")
    creation_time = models.DateTimeField()
    last_modified_time = models.DateTimeField()
    training_start_time = models.DateTimeField(null=True)
    training_end_time = models.DateTimeField(null=True)

    # What the containers' ending decided, applied once artifacts are uploaded: a SecondaryStatus
    # among Completed | Failed | Stopped | MaxRuntimeExceeded.
    outcome = models.CharField(max_length=32, blank=True, default="")
    stop_signalled_at = models.DateTimeField(null=True)
    # When a container still running at the end of the stop's grace was first sent SIGKILL; null
    # when every container exited on its SIGTERM (or no stop was needed).
    stop_killed_at = models.DateTimeField(null=True)
    artifacts_uploaded_at = models.DateTimeField(null=True)
    # Restarts after infrastructure faults so far; RetryStrategy.MaximumRetryAttempts bounds it.
    restart_count = models.PositiveSmallIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.training_job_name

    @property
    def is_terminal(self) -> bool:
        return self.training_job_status in TERMINAL_STATUSES


class SecondaryStatusTransition(models.Model):
    """One row per secondary status the job went through; renders SecondaryStatusTransitions."""

    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="transitions")
    status = models.CharField(max_length=32)
    start_time = models.DateTimeField()
    end_time = models.DateTimeField(null=True)
    status_message = models.CharField(max_length=1024, blank=True, default="")

    class Meta:
        ordering = ["start_time", "pk"]
