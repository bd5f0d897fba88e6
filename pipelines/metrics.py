"""The CloudWatch metrics SageMaker publishes for pipelines (AWS docs, "SageMaker pipelines
metrics"), in the namespace `AWS/Sagemaker/ModelBuildingPipeline`: per pipeline
(dimension PipelineName) ExecutionStarted, ExecutionSucceeded, ExecutionFailed, ExecutionStopped
(counts) and ExecutionDuration (milliseconds); per step (PipelineName, StepName) StepStarted,
StepSucceeded, StepFailed, StepStopped and StepDuration. Each is added to its minute's statistic
set as it happens, so GetMetricStatistics' Sum counts executions and steps."""

from django.utils import timezone

from logs.metrics import MinuteKey, StatisticSet, add_statistic_sets
from pipelines.models import PipelineExecution, PipelineExecutionStep

NAMESPACE = "AWS/Sagemaker/ModelBuildingPipeline"
ENDED = {"Succeeded": "Succeeded", "Failed": "Failed", "Stopped": "Stopped"}


def execution_started(execution: PipelineExecution) -> None:
    _add(execution, "ExecutionStarted", (), 1.0, "Count")


def execution_ended(execution: PipelineExecution) -> None:
    _add(execution, f"Execution{ENDED[execution.status]}", (), 1.0, "Count")
    _add(execution, "ExecutionDuration", (), _milliseconds(execution.creation_time), "Milliseconds")


def step_started(row: PipelineExecutionStep) -> None:
    _add(row.execution, "StepStarted", (("StepName", row.step_name),), 1.0, "Count")


def step_ended(row: PipelineExecutionStep) -> None:
    step = (("StepName", row.step_name),)
    _add(row.execution, f"Step{ENDED[row.status]}", step, 1.0, "Count")
    _add(row.execution, "StepDuration", step, _milliseconds(row.start_time), "Milliseconds")


def _milliseconds(since) -> float:
    return max(0.0, (timezone.now() - since).total_seconds() * 1000)


def _add(execution: PipelineExecution, name: str, extra: tuple, value: float, unit: str) -> None:
    pipeline = execution.pipeline
    now_ms = int(timezone.now().timestamp() * 1000)
    key = MinuteKey(
        account_id=pipeline.account_id,
        region=pipeline.region,
        namespace=NAMESPACE,
        metric_name=name,
        dimensions=tuple(sorted((("PipelineName", pipeline.name), *extra))),
        unit=unit,
        minute_ms=now_ms - now_ms % 60_000,
    )
    add_statistic_sets({key: StatisticSet(count=1, total=value, minimum=value, maximum=value)})
