"""Mutations and queries of pipelines and their executions, scoped to the caller's account and
region."""

import logging
import secrets
import string

from django.db import IntegrityError, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from accounts import s3_tenancy
from pipelines import definition, metrics, steps
from pipelines.models import ExecutionStatus, Pipeline, PipelineExecution, StepStatus
from pipelines.tasks import reconcile_pipeline_execution
from pipelines.transitions import transition
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ConflictException, ResourceNotFound, ValidationException
from protocol.listing import ordering
from protocol.pagination import paginate
from storage.s3 import StorageError, get_bytes, s3_uri

log = logging.getLogger(__name__)

RESOURCE_TYPE = "pipeline"
EXECUTION_ID_ALPHABET = string.ascii_lowercase + string.digits
# Members SageMaker has that Sageport does not carry out: refused by name, never ignored.
UNSUPPORTED_PIPELINE_MEMBERS = ("PipelineVersionAliases",)
UNSUPPORTED_START_MEMBERS = (
    "SelectiveExecutionConfig",
    "PipelineVersionId",
    "PipelineVersionAlias",
    "MlflowExperimentName",
)


def _refuse_unsupported(params: dict, members: tuple[str, ...]) -> None:
    given = [member for member in members if member in params]
    if given:
        raise ValidationException(
            f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} not supported by Sageport."
        )


# --- Pipelines ------------------------------------------------------------------------------------


def create_pipeline(ctx: RequestContext, params: dict) -> Pipeline:
    _refuse_unsupported(params, UNSUPPORTED_PIPELINE_MEMBERS)
    name = params["PipelineName"]
    text = _definition_text(ctx, params, required=True)
    arn = make_arn(ctx.region, ctx.account_id, RESOURCE_TYPE, name)
    now = timezone.now()
    try:
        with transaction.atomic():
            return Pipeline.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                name=name,
                arn=arn,
                display_name=params.get("PipelineDisplayName", name),
                description=params.get("PipelineDescription", ""),
                definition=text,
                role_arn=params["RoleArn"],
                parallelism_configuration=params.get("ParallelismConfiguration"),
                tags=params.get("Tags", []),
                creation_time=now,
                last_modified_time=now,
            )
    except IntegrityError:
        # SageMaker's words; the SDK's Pipeline.upsert updates on "already exists".
        raise ValidationException(
            f"Pipeline names must be unique within an AWS account and region. Pipeline with name ({name}) "
            "already exists."
        ) from None


def _definition_text(ctx: RequestContext, params: dict, required: bool) -> str | None:
    """The definition given inline or in S3 (read as the caller's account), checked."""
    inline, location = params.get("PipelineDefinition"), params.get("PipelineDefinitionS3Location")
    if inline is not None and location is not None:
        raise ValidationException("Give PipelineDefinition or PipelineDefinitionS3Location, not both.")
    if location is not None:
        inline = _read_definition(ctx, location)
    if inline is None:
        if required:
            raise ValidationException(
                "Either PipelineDefinition or PipelineDefinitionS3Location is required."
            )
        return None
    definition.parse(inline)
    return inline


def _read_definition(ctx: RequestContext, location: dict) -> str:
    if "VersionId" in location:
        raise ValidationException("PipelineDefinitionS3Location.VersionId is not supported by Sageport.")
    uri = s3_uri(location["Bucket"], location["ObjectKey"])
    try:
        where = s3_tenancy.location(ctx.account_id, uri)
        return get_bytes(where.bucket, where.key).decode("utf-8")
    except (StorageError, UnicodeDecodeError) as exc:
        raise ValidationException(f"The pipeline definition at {uri} could not be read: {exc}") from None


def get_pipeline(ctx: RequestContext, given: str) -> Pipeline:
    """A pipeline by name or ARN (PipelineNameOrArn); another account's or region's ARN names none."""
    arn = (
        given.lower()
        if given.startswith("arn:")
        else make_arn(ctx.region, ctx.account_id, RESOURCE_TYPE, given)
    )
    pipeline = Pipeline.objects.filter(account_id=ctx.account_id, region=ctx.region, arn=arn).first()
    if pipeline is None:
        raise ResourceNotFound(f"Pipeline '{arn}' does not exist.")
    return pipeline


def update_pipeline(ctx: RequestContext, params: dict) -> Pipeline:
    _refuse_unsupported(params, UNSUPPORTED_PIPELINE_MEMBERS)
    pipeline = get_pipeline(ctx, params["PipelineName"])
    text = _definition_text(ctx, params, required=False)
    changes = {
        "definition": text,
        "display_name": params.get("PipelineDisplayName"),
        "description": params.get("PipelineDescription"),
        "role_arn": params.get("RoleArn"),
        "parallelism_configuration": params.get("ParallelismConfiguration"),
    }
    for field, value in changes.items():
        if value is not None:
            setattr(pipeline, field, value)
    pipeline.last_modified_time = timezone.now()
    pipeline.save()
    return pipeline


def delete_pipeline(ctx: RequestContext, name: str) -> str:
    """SageMaker deletes a pipeline only once none of its executions runs (DeletePipeline: "you
    must stop all running instances of the pipeline")."""
    pipeline = get_pipeline(ctx, name)
    if pipeline.executions.filter(status__in=(ExecutionStatus.EXECUTING, ExecutionStatus.STOPPING)).exists():
        raise ConflictException(
            f"Pipeline '{pipeline.arn}' has running executions; stop them with StopPipelineExecution first."
        )
    pipeline.delete()
    return pipeline.arn


PIPELINE_SORT = {"Name": "name", "CreationTime": "creation_time"}


def list_pipelines(ctx: RequestContext, params: dict) -> tuple[list[Pipeline], str | None]:
    rows = Pipeline.objects.filter(account_id=ctx.account_id, region=ctx.region)
    if "PipelineNamePrefix" in params:
        rows = rows.filter(name__istartswith=params["PipelineNamePrefix"])
    rows = _created_between(rows, params)
    sort_by, sort_order = ordering("ListPipelines", params)
    field = PIPELINE_SORT[sort_by]
    prefix = "" if sort_order == "Ascending" else "-"
    return paginate(
        rows.order_by(f"{prefix}{field}", f"{prefix}pk"), params.get("NextToken"), params.get("MaxResults")
    )


def _created_between(rows, params: dict):
    if "CreatedAfter" in params:
        rows = rows.filter(creation_time__gt=params["CreatedAfter"])
    if "CreatedBefore" in params:
        rows = rows.filter(creation_time__lt=params["CreatedBefore"])
    return rows


# --- Executions -----------------------------------------------------------------------------------


def start_execution(ctx: RequestContext, params: dict) -> PipelineExecution:
    _refuse_unsupported(params, UNSUPPORTED_START_MEMBERS)
    pipeline = get_pipeline(ctx, params["PipelineName"])
    token = params["ClientRequestToken"]
    earlier = pipeline.executions.filter(client_request_token=token).first()
    if earlier is not None:  # the same call made again (the SDK retries): the same execution
        return earlier
    parsed = definition.parse(pipeline.definition)
    values = _parameter_values(parsed, params.get("PipelineParameters", []))
    execution_id = "".join(secrets.choice(EXECUTION_ID_ALPHABET) for _ in range(12))
    now = timezone.now()
    with transaction.atomic():
        execution = PipelineExecution.objects.create(
            pipeline=pipeline,
            arn=f"{pipeline.arn}/execution/{execution_id}",
            execution_id=execution_id,
            display_name=params.get(
                "PipelineExecutionDisplayName", f"execution-{int(now.timestamp() * 1000)}"
            ),
            description=params.get("PipelineExecutionDescription", ""),
            definition=pipeline.definition,
            parameters=values,
            parallelism_configuration=params.get(
                "ParallelismConfiguration", pipeline.parallelism_configuration
            ),
            client_request_token=token,
            role_arn=params.get("RoleArn", pipeline.role_arn),
            creation_time=now,
            last_modified_time=now,
            next_check_at=now,
        )
        Pipeline.objects.filter(pk=pipeline.pk).update(last_run_time=now)
        metrics.execution_started(execution)
        transaction.on_commit(lambda: nudge(execution.pk))
    return execution


def _parameter_values(parsed: definition.Definition, given: list[dict]) -> list[dict]:
    """Every parameter with its value for the execution: the one given, else its default; each
    checked against its type. A parameter the definition does not have is refused."""
    values = {item["Name"]: item["Value"] for item in given}
    unknown = sorted(set(values) - set(parsed.parameters))
    if unknown:
        raise ValidationException(f"Parameters not defined in the pipeline: {', '.join(unknown)}.")
    found = []
    for name, parameter in parsed.parameters.items():
        value = parameter.value(values.get(name))
        if value is None:
            raise ValidationException(f"Parameter '{name}' has no default value and was not given a value.")
        found.append({"Name": name, "Value": values.get(name, _as_given(value))})
    return found


def _as_given(value: object) -> str:
    """A default as StartPipelineExecution would have given it: a string."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def nudge(execution_id: int) -> None:
    """Ask a worker to look at the execution now. It is committed already: when the broker cannot
    take the message, the sweeper finds it overdue later, so the request still succeeds."""
    try:
        reconcile_pipeline_execution.delay(execution_id)
    except OperationalError as exc:
        log.warning(
            "could not enqueue pipeline execution %s (%s); the sweeper will pick it up", execution_id, exc
        )


def get_execution(ctx: RequestContext, arn: str) -> PipelineExecution:
    execution = (
        PipelineExecution.objects.select_related("pipeline")
        .filter(pipeline__account_id=ctx.account_id, pipeline__region=ctx.region, arn=arn.lower())
        .first()
    )
    if execution is None:
        raise ResourceNotFound(f"Pipeline execution '{arn}' does not exist.")
    return execution


def stop_execution(ctx: RequestContext, arn: str) -> PipelineExecution:
    """Executing → Stopping; the worker stops the running steps' jobs, then Stopped. Stopping an
    execution that is stopping already, or has ended, changes nothing."""
    for _ in range(5):
        execution = get_execution(ctx, arn)
        if execution.status != ExecutionStatus.EXECUTING:
            return execution
        if transition(execution, ExecutionStatus.STOPPING, next_check_at=timezone.now()):
            nudge(execution.pk)
            return execution
    return execution


def retry_execution(ctx: RequestContext, params: dict) -> PipelineExecution:
    """RetryPipelineExecution: a Failed execution runs again from its failed steps (each a new
    attempt, a new job); the steps that succeeded are kept, the steps the failure kept from
    starting start when they are ready. The same ClientRequestToken again changes nothing; an
    execution that is not Failed is refused (ConflictException, botocore's error for it)."""
    execution = get_execution(ctx, params["PipelineExecutionArn"])
    token = params["ClientRequestToken"]
    if execution.retry_request_token == token:
        return execution
    if execution.status != ExecutionStatus.FAILED:
        raise ConflictException(
            f"Pipeline execution '{execution.arn}' is {execution.status}; only a Failed execution "
            "can be retried."
        )
    with transaction.atomic():
        changes = {"failure_reason": "", "end_time": None, "retry_request_token": token}
        changes["next_check_at"] = timezone.now()
        if "ParallelismConfiguration" in params:
            changes["parallelism_configuration"] = params["ParallelismConfiguration"]
        if not transition(execution, ExecutionStatus.EXECUTING, **changes):
            raise ConflictException(f"Pipeline execution '{execution.arn}' changed; try again.")
        for row in execution.steps.filter(status__in=(StepStatus.FAILED, StepStatus.STOPPED)):
            steps.next_attempt(row)
        transaction.on_commit(lambda: nudge(execution.pk))
    return execution


EXECUTION_SORT = {"CreationTime": "creation_time", "PipelineExecutionArn": "arn"}


def list_executions(ctx: RequestContext, params: dict) -> tuple[list[PipelineExecution], str | None]:
    pipeline = get_pipeline(ctx, params["PipelineName"])
    rows = _created_between(pipeline.executions.all(), params)
    sort_by, sort_order = ordering("ListPipelineExecutions", params)
    field = EXECUTION_SORT[sort_by]
    prefix = "" if sort_order == "Ascending" else "-"
    return paginate(
        rows.order_by(f"{prefix}{field}", f"{prefix}pk"), params.get("NextToken"), params.get("MaxResults")
    )


def list_steps(ctx: RequestContext, params: dict) -> tuple[list, str | None]:
    """The steps started so far, the latest first unless SortOrder says Ascending."""
    if "PipelineExecutionArn" not in params:
        raise ValidationException("PipelineExecutionArn is required.")
    execution = get_execution(ctx, params["PipelineExecutionArn"])
    _, sort_order = ordering("ListPipelineExecutionSteps", params)
    prefix = "" if sort_order == "Ascending" else "-"
    rows = execution.steps.order_by(f"{prefix}start_time", f"{prefix}pk")
    return paginate(rows, params.get("NextToken"), params.get("MaxResults"))


def list_parameters(ctx: RequestContext, params: dict) -> tuple[list[dict], str | None]:
    execution = get_execution(ctx, params["PipelineExecutionArn"])
    return paginate(execution.parameters, params.get("NextToken"), params.get("MaxResults"))
