"""Pipelines: the list, a pipeline's page (its steps as the definition wires them, its executions)
and an execution's page (its steps drawn as a graph, then every step of the definition with its
state now: the job it made, its outcome, its attempts, the execution a cache hit reused, or why
it has not started), and Stop (the API's own operation)."""
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console import arn_links, pipeline_graph
from console.actions import perform
from console.addresses import address, resource_view
from console.deletion import delete
from console.viewer import Viewer, console_view
from pipelines import definition, graph, presenters
from pipelines.models import Pipeline, PipelineExecution
from protocol.errors import ValidationException

PAGE_SIZE = 50
# What the execution page says of a step that has not started (graph.plan's states).
NOT_STARTED = {graph.READY: "About to start", graph.WAITING: "Waiting", graph.NEVER: "Will not run"}


@console_view
def pipeline_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    rows = viewer.visible(Pipeline.objects.all()).order_by("-creation_time", "-pk")
    name = request.GET.get("name", "").strip()[:256]
    if name:
        rows = rows.filter(name__icontains=name)
    context = {"page": Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page")), "name": name}
    return render(request, "console/pipelines.html", context)


@resource_view(Pipeline)
def pipeline_detail(request: HttpRequest, viewer: Viewer, pipeline: Pipeline) -> HttpResponse:
    executions = pipeline.executions.order_by("-creation_time", "-pk")
    context = {
        "pipeline": pipeline,
        "steps": _steps_of(pipeline.definition),
        "page": Paginator(executions, PAGE_SIZE).get_page(request.GET.get("page")),
        "described": presenters.describe_pipeline(pipeline),
    }
    return render(request, "console/pipeline.html", context)


def _steps_of(text: str) -> list[definition.Step]:
    try:
        return list(definition.parse(text).steps.values())
    except ValidationException:  # a definition accepted by an older Sageport: shown as text only
        return []


@resource_view(PipelineExecution)
def execution_detail(request: HttpRequest, viewer: Viewer, execution: PipelineExecution) -> HttpResponse:
    rows = {row.step_name: row for row in execution.steps.all()}
    steps = _steps_of(execution.definition)
    planned = graph.plan_of(definition.parse(execution.definition), rows) if steps else {}
    items = [
        {"step": step, "row": rows.get(step.name), "state": NOT_STARTED.get(planned.get(step.name), ""),
         "made": _made(viewer, rows.get(step.name))}
        for step in steps
    ]
    statuses = {item["step"].name: item["row"].status if item["row"] else item["state"] for item in items}
    context = {
        "execution": execution,
        "steps": items,
        "drawing": pipeline_graph.draw({step.name: step.dependencies for step in steps}, statuses),
        "box_width": pipeline_graph.BOX_WIDTH,
        "box_height": pipeline_graph.BOX_HEIGHT,
        "described": presenters.describe_execution(execution),
        "parameters": execution.parameters,
    }
    return render(request, "console/pipeline_execution.html", context)


def _made(viewer: Viewer, row) -> list[dict]:
    """What a step's metadata names (a job, a model, ...), each with its console page when the
    viewer may see it; and the execution a cache hit reused."""
    if row is None:
        return []
    made = [
        _named(viewer, f"{kind}:", value.get("Arn", ""), value.get("Outcome") or value.get("ErrorMessage"))
        for kind, value in row.metadata.items() if isinstance(value, dict)
    ]
    if row.cache_source_execution_arn:
        made.append(_named(viewer, "Cache hit: the job of", row.cache_source_execution_arn))
    return made


def _named(viewer: Viewer, kind: str, arn: str, text: str | None = None) -> dict:
    return {"kind": kind, "arn": arn, "page": arn and arn_links.page_of(viewer, arn), "text": text or ""}


@resource_view(PipelineExecution)
@require_POST
def execution_stop(request: HttpRequest, viewer: Viewer, execution: PipelineExecution) -> HttpResponse:
    token = f"console-stop-{execution.pk:026d}"  # the operation's idempotency token: 32 characters or more
    params = {"PipelineExecutionArn": execution.arn, "ClientRequestToken": token}
    outcome = perform(viewer.context_for(execution.pipeline), "StopPipelineExecution", params)
    if outcome.ok:
        messages.success(request, f"Stopping {execution.display_name}: its running jobs are stopped.")
    else:
        messages.error(request, outcome.error)
    return redirect(address(viewer, execution, "console:pipeline-execution"))


@resource_view(Pipeline)
@require_POST
def pipeline_delete(request: HttpRequest, viewer: Viewer, pipeline: Pipeline) -> HttpResponse:
    # The operation's idempotency token (32 characters or more): one per pipeline row.
    params = {"PipelineName": pipeline.name, "ClientRequestToken": f"console-delete-{pipeline.pk:026d}"}
    return delete(
        request, viewer, pipeline, ("DeletePipeline", params), ("console:pipeline", "console:pipelines"),
        f"Deleted the pipeline {pipeline.name} (the jobs its executions ran are kept).",
    )
