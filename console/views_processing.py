"""Processing jobs: the list and a job's page (status, configuration, inputs and outputs, its log
streams); Stop as the API's own operation."""
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_POST

from console import live, sorting, stop_progress
from console.actions import perform
from console.addresses import address, resource_view
from console.viewer import Viewer, console_view
from processing import services as processing_services
from processing.kind import PROCESSING_LOG_GROUP
from processing.models import ProcessingJob, ProcessingJobStatus
from processing.reconciler import stop_grace_seconds
from protocol.listing import filtered_and_sorted

PAGE_SIZE = 50


@console_view
def job_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    """The visible jobs, filtered and ordered with ListProcessingJobs' own semantics."""
    params = {}
    status = request.GET.get("status", "")
    if status in ProcessingJobStatus.values:
        params["StatusEquals"] = status
    name = request.GET.get("name", "").strip()[:63]
    if name:
        params["NameContains"] = name
    ordered = filtered_and_sorted(
        viewer.visible(ProcessingJob.objects.all()),
        {**sorting.chosen(request, processing_services.SORT_FIELDS), **params},
        operation="ListProcessingJobs",
        name_field="processing_job_name",
        sort_fields=processing_services.SORT_FIELDS,
        status_field="processing_job_status",
    )
    context = {
        "page": Paginator(ordered, PAGE_SIZE).get_page(request.GET.get("page")),
        "statuses": ProcessingJobStatus.values,
        "status": status,
        "name": request.GET.get("name", ""),
    }
    return render(request, "console/processing_jobs.html", context)


@resource_view(ProcessingJob)
def job_detail(request: HttpRequest, viewer: Viewer, job: ProcessingJob) -> HttpResponse:
    context = {
        "job": job,
        "cluster": job.request["ProcessingResources"]["ClusterConfig"],
        "inputs": job.request.get("ProcessingInputs", []),
        "outputs": job.request.get("ProcessingOutputConfig", {}).get("Outputs", []),
        "stop": _stop_progress(job),
    }
    return render(request, "console/processing_job.html", context)


@resource_view(ProcessingJob)
def job_live(request: HttpRequest, viewer: Viewer, job: ProcessingJob) -> HttpResponse:
    """What a job's page refreshes while it runs: its status and its log streams."""
    return JsonResponse({
        "terminal": job.is_terminal,
        "status_html": render_to_string(
            "console/_processing_status.html", {"job": job, "stop": _stop_progress(job)}, request
        ),
        "streams": live.streams(viewer.context_for(job), PROCESSING_LOG_GROUP, f"{job.processing_job_name}/"),
    })


@resource_view(ProcessingJob)
def job_logs(request: HttpRequest, viewer: Viewer, job: ProcessingJob) -> HttpResponse:
    return live.log_lines(
        viewer.context_for(job),
        PROCESSING_LOG_GROUP,
        f"{job.processing_job_name}/",
        request.GET,
    )


@resource_view(ProcessingJob)
@require_POST
def job_stop(request: HttpRequest, viewer: Viewer, job: ProcessingJob) -> HttpResponse:
    name = job.processing_job_name
    outcome = perform(viewer.context_for(job), "StopProcessingJob", {"ProcessingJobName": name})
    if outcome.ok:
        messages.success(request, f"Stopping {name}: its outputs are uploaded once it ends.")
    else:
        messages.error(request, outcome.error)
    return redirect(address(viewer, job, "console:processing-job"))


def _stop_progress(job: ProcessingJob) -> stop_progress.StopProgress | None:
    return stop_progress.of(
        job.stop_signalled_at, job.stop_killed_at, stop_grace_seconds(job), job.is_terminal, timezone.now()
    )
