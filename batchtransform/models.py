"""Transform jobs as the database records them: the database is the truth, the worker runs them."""

from django.db import models

from reconcile.leases import LeasedRow


class TransformJobStatus(models.TextChoices):
    """`TransformJobStatus`: the values of the API (and of `StatusEquals`)."""

    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"
    STOPPING = "Stopping"
    STOPPED = "Stopped"


TERMINAL_STATUSES = frozenset(
    {TransformJobStatus.COMPLETED, TransformJobStatus.FAILED, TransformJobStatus.STOPPED}
)


class TransformJob(LeasedRow):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    transform_job_name = models.CharField(max_length=63)
    # Lower-cased name inside, as SageMaker does; unique, so names are unique case-insensitively.
    transform_job_arn = models.CharField(max_length=256, unique=True)
    # The validated CreateTransformJob request (without Tags), stored as received.
    request = models.JSONField()
    # The model's CreateModel request when the job was created: deleting or replacing the model
    # later does not change what the job runs.
    model = models.JSONField()
    tags = models.JSONField(default=list)

    transform_job_status = models.CharField(max_length=16, default=TransformJobStatus.IN_PROGRESS)
    failure_reason = models.CharField(max_length=1024, blank=True, default="")
    creation_time = models.DateTimeField()
    last_modified_time = models.DateTimeField()
    transform_start_time = models.DateTimeField(null=True)
    transform_end_time = models.DateTimeField(null=True)

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.transform_job_name

    @property
    def is_terminal(self) -> bool:
        return self.transform_job_status in TERMINAL_STATUSES
