"""Training jobs: the list, a job's page, and what it polls; Stop and Clone as API operations."""

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts import s3_tenancy
from console import live, snippets, sorting, stop_progress
from console.actions import perform
from console.addresses import address, resource_view
from console.s3_links import href
from console.viewer import Viewer, console_view
from protocol.listing import filtered_and_sorted
from storage import s3
from training import presenters
from training import services as training_services
from training.kind import TRAINING_LOG_GROUP
from training.metrics import metric_definitions, series_key
from training.models import TrainingJob, TrainingJobStatus
from training.reconciler import stop_grace_seconds

PAGE_SIZE = 50


def _listed(viewer: Viewer, request: HttpRequest):
    """The visible jobs, filtered and ordered with ListTrainingJobs' own semantics."""
    params = {}
    status = request.GET.get("status", "")
    if status in TrainingJobStatus.values:
        params["StatusEquals"] = status
    name = request.GET.get("name", "").strip()[:63]
    if name:
        params["NameContains"] = name
    rows = viewer.visible(TrainingJob.objects.all())
    ordered = filtered_and_sorted(
        rows,
        {**sorting.chosen(request, training_services.SORT_FIELDS), **params},
        operation="ListTrainingJobs",
        name_field="training_job_name",
        sort_fields=training_services.SORT_FIELDS,
        status_field="training_job_status",
    )
    return Paginator(ordered, PAGE_SIZE).get_page(request.GET.get("page"))


@console_view
def job_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    page = _listed(viewer, request)
    context = {
        "page": page,
        "statuses": TrainingJobStatus.values,
        "status": request.GET.get("status", ""),
        "name": request.GET.get("name", ""),
        "now": timezone.now(),
    }
    return render(request, "console/training_jobs.html", context)


@console_view
def job_rows(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    """The list's rows, re-rendered for the page's live refresh."""
    page = _listed(viewer, request)
    html = render_to_string("console/_training_rows.html", {"page": page, "now": timezone.now()}, request)
    running = sum(1 for job in page if not job.is_terminal)
    return JsonResponse({"html": html, "running": running})


@resource_view(TrainingJob)
def job_detail(request: HttpRequest, viewer: Viewer, job: TrainingJob) -> HttpResponse:
    request_body = snippets.create_request(job)
    context = {
        "job": job,
        "described": presenters.describe_training_job(job),
        "instance": job.request["ResourceConfig"],
        "hyperparameters": sorted(job.request.get("HyperParameters", {}).items()),
        "channels": job.request.get("InputDataConfig", []),
        "locations": _locations(job),
        "metric_names": [definition.name for definition in metric_definitions(job)],
        "now": timezone.now(),
        "stop": _stop_progress(job, timezone.now()),
        "cli": snippets.cli_command(request_body),
        "boto3": snippets.boto3_code(request_body),
        "request_json": snippets.as_json(request_body),
    }
    return render(request, "console/training_job.html", context)


def _locations(job: TrainingJob) -> list[tuple[str, str, str | None, str]]:
    """(what, S3 URI, its console address or None, why there is none). The model artifacts are
    linked only once they exist: a job that failed before it trained wrote none."""
    artifacts = presenters.model_artifacts_uri(job)
    found = [("Model artifacts", artifacts, *_artifacts_link(job, artifacts))]
    output = presenters.output_base_uri(job) + "/"
    found.append(("Output", output, href(output), ""))
    checkpoint = job.request.get("CheckpointConfig", {}).get("S3Uri")
    if checkpoint:
        found.append(("Checkpoints", checkpoint, href(checkpoint.rstrip("/") + "/"), ""))
    return found


def _artifacts_link(job: TrainingJob, uri: str) -> tuple[str | None, str]:
    if uri.endswith("/"):  # uncompressed: a prefix, listed even while empty
        return href(uri), ""
    if not job.is_terminal:
        return None, "written when the job ends"
    try:
        exists = s3.object_size(*s3_tenancy.location(job.account_id, uri)) is not None
    except s3_tenancy.ForeignLocation:
        return None, "no longer this account's bucket"
    except s3.StorageError:
        return None, "S3 did not answer"
    return (href(uri), "") if exists else (None, "not written: the job ended before it saved a model")


@resource_view(TrainingJob)
def job_live(request: HttpRequest, viewer: Viewer, job: TrainingJob) -> HttpResponse:
    """What a job's page refreshes while it runs: status, timeline, log streams."""
    now = timezone.now()
    context = {"job": job, "now": now, "stop": _stop_progress(job, now)}
    return JsonResponse(
        {
            "terminal": job.is_terminal,
            "status_html": render_to_string("console/_training_status.html", context, request),
            "timeline_html": render_to_string("console/_training_timeline.html", context, request),
            "streams": live.streams(viewer.context_for(job), TRAINING_LOG_GROUP, f"{job.training_job_name}/"),
        }
    )


@resource_view(TrainingJob)
def job_logs(request: HttpRequest, viewer: Viewer, job: TrainingJob) -> HttpResponse:
    return live.log_lines(
        viewer.context_for(job),
        TRAINING_LOG_GROUP,
        f"{job.training_job_name}/",
        request.GET,
    )


@resource_view(TrainingJob)
def job_metrics(request: HttpRequest, viewer: Viewer, job: TrainingJob) -> HttpResponse:
    names = [definition.name for definition in metric_definitions(job)]
    return JsonResponse({"series": live.series(series_key(job), names)})


@resource_view(TrainingJob)
@require_POST
def job_stop(request: HttpRequest, viewer: Viewer, job: TrainingJob) -> HttpResponse:
    outcome = perform(viewer.context_for(job), "StopTrainingJob", {"TrainingJobName": job.training_job_name})
    if outcome.ok:
        messages.success(
            request, f"Stopping {job.training_job_name}: its artifacts are uploaded once it ends."
        )
    else:
        messages.error(request, outcome.error)
    return redirect(address(viewer, job, "console:training-job"))


@resource_view(TrainingJob)
def job_clone(request: HttpRequest, viewer: Viewer, job: TrainingJob) -> HttpResponse:
    """A prefilled CreateTrainingJob form: the new name and the request as JSON, editable."""
    name = request.POST.get("name", f"{job.training_job_name[:57]}-clone").strip()
    body = {key: value for key, value in snippets.create_request(job).items() if key != "TrainingJobName"}
    text = request.POST.get("request", snippets.as_json(body))
    error = ""
    if request.method == "POST":
        created, error = _create(viewer, job, name, text)
        if created is not None:
            messages.success(request, f"Created {name}.")
            return redirect(address(viewer, created, "console:training-job"))
    context = {"job": job, "name": name, "request_text": text, "error": error}
    return render(request, "console/training_clone.html", context, status=400 if error else 200)


def _create(viewer: Viewer, source: TrainingJob, name: str, text: str) -> tuple[TrainingJob | None, str]:
    try:
        body = json.loads(text)
    except ValueError as problem:
        return None, f"The request is not valid JSON: {problem}"
    if not isinstance(body, dict):
        return None, "The request must be a JSON object."
    ctx = viewer.context_for(source)  # the clone is created in the source job's account and region
    outcome = perform(ctx, "CreateTrainingJob", {**body, "TrainingJobName": name})
    if not outcome.ok:
        return None, outcome.error
    created = TrainingJob.objects.filter(training_job_arn=outcome.response["TrainingJobArn"]).first()
    if created is None:
        raise Http404("The new job vanished.")
    return created, ""


def _stop_progress(job: TrainingJob, now) -> stop_progress.StopProgress | None:
    return stop_progress.of(
        job.stop_signalled_at, job.stop_killed_at, stop_grace_seconds(job), job.is_terminal, now
    )
