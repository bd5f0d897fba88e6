"""Transform jobs: the list, filtered and paged as ListTransformJobs does, a job's page (what
DescribeTransformJob answers, and its instances' log streams and data logs), and Stop (the API's
StopTransformJob)."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from batchtransform import presenters
from batchtransform import services as transform_services
from batchtransform.kind import TRANSFORM_LOG_GROUP
from batchtransform.models import TransformJob, TransformJobStatus
from console import sorting
from console.actions import perform
from console.addresses import address, resource_view
from console.viewer import Viewer, console_view
from logs.models import LogStream
from logs.store import read
from protocol.listing import filtered_and_sorted

PAGE_SIZE = 50
LOG_LINES_SHOWN = 200  # the newest lines of each stream on a job's page


@console_view
def job_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    params = {}
    name = request.GET.get("name", "").strip()[:63]
    if name:
        params["NameContains"] = name
    status = request.GET.get("status", "")
    if status in TransformJobStatus.values:
        params["StatusEquals"] = status
    rows = filtered_and_sorted(
        viewer.visible(TransformJob.objects.all()),
        {**sorting.chosen(request, transform_services.SORT_FIELDS), **params},
        operation="ListTransformJobs",
        name_field="transform_job_name",
        sort_fields=transform_services.SORT_FIELDS,
        status_field="transform_job_status",
    )
    context = {
        "page": Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page")),
        "statuses": TransformJobStatus.values,
        "status": status,
        "name": request.GET.get("name", ""),
    }
    return render(request, "console/transform_jobs.html", context)


@resource_view(TransformJob)
def job_detail(request: HttpRequest, viewer: Viewer, job: TransformJob) -> HttpResponse:
    streams = LogStream.objects.filter(
        account_id=job.account_id,
        region=job.region,
        group_name=TRANSFORM_LOG_GROUP,
        stream_name__startswith=f"{job.transform_job_name}/",
    ).order_by("stream_name")
    logs = [
        {"name": stream.stream_name, "lines": [message for _, message in read(stream, tail=LOG_LINES_SHOWN)]}
        for stream in streams
    ]
    context = {"job": job, "described": presenters.describe_transform_job(job), "logs": logs}
    return render(request, "console/transform_job.html", context)


@resource_view(TransformJob)
@require_POST
def job_stop(request: HttpRequest, viewer: Viewer, job: TransformJob) -> HttpResponse:
    outcome = perform(
        viewer.context_for(job), "StopTransformJob", {"TransformJobName": job.transform_job_name}
    )
    if outcome.ok:
        messages.success(request, f"Stopping {job.transform_job_name}: no more records are sent.")
    else:
        messages.error(request, outcome.error)
    return redirect(address(viewer, job, "console:transform-job"))
