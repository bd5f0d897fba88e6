"""Pipelines as the database records them: the pipeline (its definition as given), each execution
(the definition it runs, frozen at its start, and its parameters) and each step an execution
started (the job it created, its outcome and the properties later steps read)."""

from django.db import models

from reconcile.leases import LeasedRow


class ExecutionStatus(models.TextChoices):
    """`PipelineExecutionStatus`; CompletedWithFailures never happens here (no step is allowed to
    fail without failing the execution)."""

    EXECUTING = "Executing"
    STOPPING = "Stopping"
    STOPPED = "Stopped"
    FAILED = "Failed"
    SUCCEEDED = "Succeeded"


TERMINAL_STATUSES = frozenset({ExecutionStatus.STOPPED, ExecutionStatus.FAILED, ExecutionStatus.SUCCEEDED})


class StepStatus(models.TextChoices):
    STARTING = "Starting"
    EXECUTING = "Executing"
    STOPPING = "Stopping"
    STOPPED = "Stopped"
    FAILED = "Failed"
    SUCCEEDED = "Succeeded"


STEP_ENDS = frozenset({StepStatus.STOPPED, StepStatus.FAILED, StepStatus.SUCCEEDED})


class Pipeline(models.Model):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    name = models.CharField(max_length=256)
    # Lower-cased name inside, as SageMaker does; unique, so names are unique case-insensitively.
    arn = models.CharField(max_length=512, unique=True)
    display_name = models.CharField(max_length=256)
    description = models.CharField(max_length=3072, blank=True, default="")
    definition = models.TextField()
    role_arn = models.CharField(max_length=2048)
    parallelism_configuration = models.JSONField(null=True)
    tags = models.JSONField(default=list)
    created_by = models.JSONField(default=dict)
    creation_time = models.DateTimeField()
    last_modified_time = models.DateTimeField()
    last_run_time = models.DateTimeField(null=True)

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.name


class PipelineExecution(LeasedRow):
    pipeline = models.ForeignKey(Pipeline, on_delete=models.CASCADE, related_name="executions")
    # `<pipeline arn>/execution/<execution id>`
    arn = models.CharField(max_length=600, unique=True)
    execution_id = models.CharField(max_length=16)
    display_name = models.CharField(max_length=82)
    description = models.CharField(max_length=3072, blank=True, default="")
    # The pipeline's definition when the execution started (DescribePipelineDefinitionForExecution).
    definition = models.TextField()
    # Every parameter of the definition with its value for this execution: [{"Name", "Value"}].
    parameters = models.JSONField(default=list)
    parallelism_configuration = models.JSONField(null=True)
    client_request_token = models.CharField(max_length=128, blank=True, default="")
    # The ClientRequestToken of the latest RetryPipelineExecution: the same call again is a no-op.
    retry_request_token = models.CharField(max_length=128, blank=True, default="")
    role_arn = models.CharField(max_length=2048)
    status = models.CharField(max_length=16, default=ExecutionStatus.EXECUTING)
    failure_reason = models.CharField(max_length=1300, blank=True, default="")
    created_by = models.JSONField(default=dict)
    creation_time = models.DateTimeField()
    last_modified_time = models.DateTimeField()
    end_time = models.DateTimeField(null=True)

    class Meta:
        indexes = [models.Index(fields=["pipeline", "creation_time"])]

    def __str__(self):
        return self.arn

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


class PipelineExecutionStep(models.Model):
    """A step the execution started. Its resource's name is chosen, and recorded here, before the
    resource is created, so that creating it again after a crash finds it made."""

    execution = models.ForeignKey(PipelineExecution, on_delete=models.CASCADE, related_name="steps")
    step_name = models.CharField(max_length=64)
    step_type = models.CharField(max_length=32)
    resource_name = models.CharField(max_length=63, blank=True, default="")
    status = models.CharField(max_length=16, default=StepStatus.STARTING)
    failure_reason = models.CharField(max_length=3072, blank=True, default="")
    # PipelineExecutionStepMetadata: {"TrainingJob": {"Arn": ...}}, {"Condition": {"Outcome": ...}}
    metadata = models.JSONField(default=dict)
    # What `{"Get": "Steps.<name>.…"}` reads: the resource's Describe answer once it succeeded.
    properties = models.JSONField(default=dict)
    # Step caching (caching.py): the step's cache key, and the execution whose job a hit reused.
    cache_key = models.CharField(max_length=64, blank=True, default="")
    cache_source_execution_arn = models.CharField(max_length=600, blank=True, default="")
    # Retry policies (retries.py): the attempt the row is at, and when a retry's attempt is due.
    attempt_count = models.PositiveIntegerField(default=1)
    retry_at = models.DateTimeField(null=True)
    start_time = models.DateTimeField()
    end_time = models.DateTimeField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["execution", "step_name"], name="one_row_per_step")]
        ordering = ["start_time", "pk"]

    def __str__(self):
        return self.step_name

    @property
    def ended(self) -> bool:
        return self.status in STEP_ENDS
