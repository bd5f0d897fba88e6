"""Tuning jobs as the database records them: the job, and each training job it launched with the
hyperparameters it chose (the search state: a worker restart picks up from these rows)."""
from django.db import models

from reconcile.leases import LeasedRow


class TuningJobStatus(models.TextChoices):
    """`HyperParameterTuningJobStatus`; Deleting and DeleteFailed never happen here (there is no
    DeleteHyperParameterTuningJob)."""

    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"
    STOPPING = "Stopping"
    STOPPED = "Stopped"


TERMINAL_STATUSES = frozenset({TuningJobStatus.COMPLETED, TuningJobStatus.FAILED, TuningJobStatus.STOPPED})


class HyperParameterTuningJob(LeasedRow):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    name = models.CharField(max_length=32)
    # Lower-cased name inside, as SageMaker does; unique, so names are unique case-insensitively.
    arn = models.CharField(max_length=256, unique=True)
    # The validated request (without Tags) as Describe shows it.
    request = models.JSONField()
    tags = models.JSONField(default=list)
    # The seed of the Random search: the request's RandomSeed, else one drawn at create, so that the
    # N-th training job's hyperparameters are the same whichever worker chooses them.
    seed = models.BigIntegerField()

    status = models.CharField(max_length=16, default=TuningJobStatus.IN_PROGRESS)
    failure_reason = models.CharField(max_length=1024, blank=True, default="")
    creation_time = models.DateTimeField()
    last_modified_time = models.DateTimeField()
    end_time = models.DateTimeField(null=True)

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.name

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


class TuningTrainingJob(models.Model):
    """A training job the tuning job launched: its number (1, 2, ...), its attempt (0; 1, 2, ... for
    the retries of a number whose training job failed with an internal error, tuning/retries.py),
    its name (chosen before the training job is created, so that creating it again after a crash
    finds it) and the tuned hyperparameters (a retry's: those of the attempt it retries). Whether
    the training job exists yet, its status and its objective are the training job's own, read
    when needed (tuning/trials.py)."""

    tuning_job = models.ForeignKey(HyperParameterTuningJob, on_delete=models.CASCADE, related_name="trials")
    number = models.PositiveIntegerField()
    attempt = models.PositiveSmallIntegerField(default=0)
    training_job_name = models.CharField(max_length=63)
    definition_name = models.CharField(max_length=64, blank=True, default="")
    tuned_hyperparameters = models.JSONField()

    class Meta:
        # One row per attempt of a number: two steps recording the same retry collide here.
        constraints = [
            models.UniqueConstraint(fields=["tuning_job", "number", "attempt"], name="one_trial_per_attempt")
        ]
        ordering = ["number", "attempt"]

    def __str__(self):
        return self.training_job_name
