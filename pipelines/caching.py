"""Step caching (a step's CacheConfig), as SageMaker documents it ("Caching pipeline steps"): a
step whose cache is on reuses the job of an earlier successful run of the same step of the same
pipeline whose arguments were the same, no older than ExpireAfter; the most recent such run wins.

The key is the step's type and its arguments evaluated with the execution's parameters and the
properties they read, the execution variables left as written: they differ in every execution
(the SDK puts `Execution.PipelineExecutionId` in its default output paths), and an execution
variable in the arguments does not keep SageMaker's cache from hitting."""

import hashlib
import json
import re
from datetime import timedelta

from django.utils import timezone

from pipelines import expressions
from pipelines.models import PipelineExecution, PipelineExecutionStep, StepStatus

# ISO 8601 durations as the docs give them ("P30D", "PT1H", "30dT5h", "T16m"): years and months
# are counted as 365 and 30 days.
_DURATION = re.compile(
    r"^P?(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?$",
    re.IGNORECASE,
)
_DAYS = {"years": 365, "months": 30, "weeks": 7, "days": 1}
_SECONDS = {"hours": 3600, "minutes": 60, "seconds": 1}


def duration(text: object) -> timedelta | None:
    """ExpireAfter as a timedelta; None when it is not an ISO 8601 duration."""
    found = _DURATION.match(text) if isinstance(text, str) and text.strip("PpTt") else None
    if found is None:
        return None
    parts = {name: int(value) for name, value in found.groupdict().items() if value}
    return timedelta(
        days=sum(parts.get(unit, 0) * days for unit, days in _DAYS.items()),
        seconds=sum(parts.get(unit, 0) * seconds for unit, seconds in _SECONDS.items()),
    )


class _KeyScope:
    """The execution's scope with its execution variables left as the expressions they are."""

    def __init__(self, scope: expressions.Scope):
        self._scope = scope

    def parameter(self, name: str) -> object:
        return self._scope.parameter(name)

    def variable(self, name: str) -> object:
        return f"Execution.{name}"

    def step_property(self, step: str, path: str) -> object:
        return self._scope.step_property(step, path)

    def property_file(self, step: str, name: str, json_path: str) -> object:
        return self._scope.property_file(step, name, json_path)

    def s3_json(self, uri: str, json_path: str) -> object:
        return self._scope.s3_json(uri, json_path)


def key(step_type: str, arguments: object, scope: expressions.Scope) -> str:
    keyed = expressions.evaluate(arguments, _KeyScope(scope))
    text = json.dumps([step_type, keyed], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def earlier_run(
    execution: PipelineExecution, step_name: str, cache_key: str, expire_after: timedelta | None
) -> PipelineExecutionStep | None:
    """The most recent successful run of the step, with the same key, by another execution of
    the pipeline, within `expire_after` (any age when the step gave none)."""
    found = PipelineExecutionStep.objects.filter(
        execution__pipeline_id=execution.pipeline_id,
        step_name=step_name,
        cache_key=cache_key,
        status=StepStatus.SUCCEEDED,
    ).exclude(execution_id=execution.pk)
    if expire_after is not None:
        found = found.filter(end_time__gte=timezone.now() - expire_after)
    return found.select_related("execution").order_by("-end_time", "-pk").first()


def source_arn(row: PipelineExecutionStep) -> str:
    """The execution whose job a hit reuses: the run's own, or the one it reused in turn."""
    return row.cache_source_execution_arn or row.execution.arn
