"""One look at one step of an execution: start it (record its row, then create its resource),
follow its job, stop it. The step's row is written here only, by the reconcile step that holds
the execution's lease.

A resource's name is chosen and recorded before the resource is created, and looked up before
it is created again, so a worker that dies between the two leaves nothing twice."""

import hashlib
import logging
import re
from datetime import datetime

from django.db import IntegrityError
from django.utils import timezone

from pipelines import caching, conditions, expressions, metrics, retries
from pipelines.calls import call
from pipelines.definition import CONDITION, FAIL, Step
from pipelines.kinds import JOB_STEP_STATUS, KINDS, Kind
from pipelines.models import PipelineExecution, PipelineExecutionStep, StepStatus
from pipelines.scope import ExecutionScope
from protocol.context import RequestContext
from protocol.errors import ServiceError

log = logging.getLogger(__name__)

# "Model Package Group already exists" (modelregistry): the group a RegisterModel step names may
# have been made by an earlier execution; SageMaker Pipelines creates it when it is missing.
GROUP_EXISTS = "already exists"


def context(execution: PipelineExecution) -> RequestContext:
    """The execution acts as its pipeline's account: its jobs and their S3 locations are that
    account's."""
    return RequestContext(
        account_id=execution.pipeline.account_id, region=execution.pipeline.region, access_key_id=""
    )


def resource_name(execution: PipelineExecution, step_name: str, step_type: str, attempt: int = 1) -> str:
    """`pipelines-<execution id>-<step>-<hash>`, as SageMaker names a pipeline's jobs: a valid job,
    model name (63 characters at most) for any step name, distinct for distinct steps and for a
    retry's attempts; `pipelines-<execution id>-<hash>` where 32 characters is the most (tuning)."""
    cleaned = re.sub(r"[^a-zA-Z0-9]+", "-", step_name).strip("-")[:32] or "step"
    hashed = step_name if attempt == 1 else f"{step_name}#{attempt}"
    digest = hashlib.sha256(hashed.encode()).hexdigest()[:6]
    if KINDS[step_type].name_limit < 63:
        return f"pipelines-{execution.execution_id}-{digest}"
    return f"pipelines-{execution.execution_id}-{cleaned}-{digest}"


def record(execution: PipelineExecution, step: Step) -> PipelineExecutionStep | None:
    """The step's row, Starting; None when another look recorded it first."""
    try:
        row = PipelineExecutionStep.objects.create(
            execution=execution,
            step_name=step.name,
            step_type=step.type,
            resource_name=resource_name(execution, step.name, step.type) if step.type in KINDS else "",
            start_time=timezone.now(),
        )
    except IntegrityError:
        return None
    metrics.step_started(row)
    return row


def advance(row: PipelineExecutionStep, step: Step, scope: ExecutionScope) -> None:
    """Move a step that has not ended as far as it goes now (a retry waits for its time)."""
    if row.status == StepStatus.STARTING:
        if row.retry_at is None or row.retry_at <= timezone.now():
            _launch(row, step, scope)
    elif step.type in KINDS:
        _observe(row, KINDS[step.type], context(scope.execution), step.retry_policies)


def _launch(row: PipelineExecutionStep, step: Step, scope: ExecutionScope) -> None:
    try:
        if step.type == CONDITION:
            outcome = conditions.holds(
                step.arguments["Conditions"], lambda value: expressions.evaluate(value, scope)
            )
            _end(
                row,
                StepStatus.SUCCEEDED,
                metadata={"Condition": {"Outcome": str(outcome)}},
                properties={"Outcome": outcome},
            )
        elif step.type == FAIL:
            message = expressions.as_text(expressions.evaluate(step.arguments.get("ErrorMessage", ""), scope))
            _end(row, StepStatus.FAILED, failure_reason=message, metadata={"Fail": {"ErrorMessage": message}})
        elif not _reused(row, step, scope):
            arguments = expressions.evaluate(step.arguments, scope)
            _create(row, KINDS[step.type], arguments, context(scope.execution), step.retry_policies)
    except expressions.ExpressionError as exc:
        _end(row, StepStatus.FAILED, failure_reason=f"ClientError: {exc}")
    except ServiceError as exc:
        # SageMaker fails the step with the error the create call got, unless a policy retries it.
        if not _retried(row, step.retry_policies, retries.of_call(exc)):
            _end(row, StepStatus.FAILED, failure_reason=f"ClientError: {exc.code}: {exc.message}")


def _reused(row: PipelineExecutionStep, step: Step, scope: ExecutionScope) -> bool:
    """A cached step whose earlier run is found ends Succeeded with that run's job: its Metadata
    (the job's ARN) and its properties; the key is kept on the row for later executions."""
    if not step.cached:
        return False
    cache_key = caching.key(step.type, step.arguments, scope)
    if row.cache_key == cache_key:  # an earlier look missed and went on to make the job: keep it
        return False
    earlier = caching.earlier_run(scope.execution, step.name, cache_key, step.cache_expire_after)
    if earlier is None:
        _set(row, cache_key=cache_key)
        return False
    _end(
        row,
        StepStatus.SUCCEEDED,
        cache_key=cache_key,
        cache_source_execution_arn=caching.source_arn(earlier),
        metadata=earlier.metadata,
        properties=earlier.properties,
    )
    return True


def _retried(
    row: PipelineExecutionStep, policies: tuple[retries.RetryPolicy, ...], error: str | None
) -> bool:
    """Start the step's next attempt (a new resource, named and recorded now) when a policy
    retries `error`; whether it did."""
    when = retries.next_attempt(policies, error, row.attempt_count, row.start_time)
    if when is None:
        return False
    log.info("step %s: %s, attempt %d at %s", row.step_name, error, row.attempt_count + 1, when.isoformat())
    next_attempt(row, when)
    return True


def next_attempt(row: PipelineExecutionStep, when: datetime | None = None) -> None:
    """Put an ended step back to Starting as its next attempt, due at `when` (None: now), with a
    new resource name, recorded before the resource is made."""
    attempt = row.attempt_count + 1
    _set(
        row,
        status=StepStatus.STARTING,
        attempt_count=attempt,
        retry_at=when,
        resource_name=resource_name(row.execution, row.step_name, row.step_type, attempt)
        if row.resource_name
        else "",
        metadata={},
        failure_reason="",
        end_time=None,
    )


def _create(
    row: PipelineExecutionStep,
    kind: Kind,
    arguments: dict,
    ctx: RequestContext,
    policies: tuple[retries.RetryPolicy, ...],
) -> None:
    answer = _existing(row, kind, ctx)
    if answer is None:
        request = dict(arguments)
        if kind.create == "CreateModelPackage":
            _ensure_group(ctx, request)
            request["ClientToken"] = hashlib.md5(f"{row.execution.arn}/{row.step_name}".encode()).hexdigest()
        else:
            request[kind.name_member] = row.resource_name
        arn = call(ctx, kind.create, request)[kind.arn_member]
        answer = _describe(ctx, kind, arn if kind.create == "CreateModelPackage" else row.resource_name)
    metadata = {kind.metadata_key: {"Arn": answer[kind.arn_member]}}
    if kind.status_member:
        _set(row, status=StepStatus.EXECUTING, metadata=metadata)
        _follow(row, answer, kind, policies)
    else:
        _end(row, StepStatus.SUCCEEDED, metadata=metadata, properties=answer)


def _existing(row: PipelineExecutionStep, kind: Kind, ctx: RequestContext) -> dict | None:
    """The step's resource if an earlier look created it (a RegisterModel step's create call is
    idempotent by its ClientToken instead)."""
    if kind.create == "CreateModelPackage":
        return None
    try:
        return _describe(ctx, kind, row.resource_name)
    except ServiceError:
        return None


def _describe(ctx: RequestContext, kind: Kind, name: str) -> dict:
    answer = call(ctx, kind.describe, {kind.name_member: name})
    if kind.children and answer.get(kind.status_member) == "Completed":
        answer = {**answer, **_best_first(ctx, kind, name, answer)}
    return answer


def _best_first(ctx: RequestContext, kind: Kind, name: str, answer: dict) -> dict:
    """A completed tuning job's training jobs, the best by the objective first, 50 at most (the
    SDK's TuningStep.get_top_model_s3_uri: "the best training job model is at index 0")."""
    objective = answer.get("HyperParameterTuningJobConfig", {}).get("HyperParameterTuningJobObjective")
    if objective is None:  # several training job definitions: each has its own, all of one Type
        objective = answer.get("TrainingJobDefinitions", [{}])[0].get("TuningObjective", {})
    order = "Ascending" if objective.get("Type") == "Minimize" else "Descending"
    request = {kind.name_member: name, "SortBy": "FinalObjectiveMetricValue", "SortOrder": order}
    listed = call(ctx, kind.children, {**request, "MaxResults": 50})
    listed.pop("NextToken", None)
    return listed


def _ensure_group(ctx: RequestContext, request: dict) -> None:
    group = request.get("ModelPackageGroupName")
    if not group:
        return
    try:
        call(ctx, "CreateModelPackageGroup", {"ModelPackageGroupName": group})
    except ServiceError as exc:
        if GROUP_EXISTS not in exc.message:
            raise


def _observe(
    row: PipelineExecutionStep,
    kind: Kind,
    ctx: RequestContext,
    policies: tuple[retries.RetryPolicy, ...] = (),
) -> None:
    _follow(row, _describe(ctx, kind, row.resource_name), kind, policies)


def _follow(
    row: PipelineExecutionStep, answer: dict, kind: Kind, policies: tuple[retries.RetryPolicy, ...] = ()
) -> None:
    status = JOB_STEP_STATUS[answer[kind.status_member]]
    reason = answer.get("FailureReason", "")
    if status == StepStatus.FAILED and _retried(row, policies, retries.of_failure(reason)):
        return
    if status == StepStatus.SUCCEEDED:
        _end(row, status, properties=answer)
    elif status in (StepStatus.FAILED, StepStatus.STOPPED):
        _end(row, status, failure_reason=reason, properties=answer)
    elif status != row.status:
        _set(row, status=status)


def stop(row: PipelineExecutionStep, execution: PipelineExecution) -> None:
    """StopPipelineExecution's share of one step: a job is stopped and followed until it ended;
    a step whose resource was never created ends Stopped."""
    kind = KINDS.get(row.step_type)
    ctx = context(execution)
    unmade = row.status == StepStatus.STARTING and (kind is None or _existing(row, kind, ctx) is None)
    if unmade or kind is None or not kind.stop:
        _end(row, StepStatus.STOPPED)
        return
    if row.status in (StepStatus.STARTING, StepStatus.EXECUTING):
        try:
            call(ctx, kind.stop, {kind.name_member: row.resource_name})
        except ServiceError as exc:
            log.info("step %s: stop refused (%s); following the job", row.step_name, exc.message)
    _observe(row, kind, ctx)


def _set(row: PipelineExecutionStep, **fields) -> None:
    for name, value in fields.items():
        setattr(row, name, value)
    row.save(update_fields=list(fields))


def _end(row: PipelineExecutionStep, status: str, **fields) -> None:
    _set(
        row,
        status=status,
        end_time=timezone.now(),
        **{name: value[:3072] if name == "failure_reason" else value for name, value in fields.items()},
    )
    metrics.step_ended(row)
