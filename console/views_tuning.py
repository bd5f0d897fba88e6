"""Hyperparameter tuning jobs: the list, filtered and paged as ListHyperParameterTuningJobs does,
a job's page (its counters, the best training job, a warm start's parents and overall best, every
training job with its definition (when several), hyperparameters and objective, what
DescribeHyperParameterTuningJob
answers), and Stop (the API's own operation)."""
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console import sorting
from console.actions import perform
from console.addresses import address, resource_view
from console.viewer import Viewer, console_view
from protocol.listing import filtered_and_sorted
from tuning import definitions, presenters, trials
from tuning import services as tuning_services
from tuning.models import HyperParameterTuningJob, TuningJobStatus

PAGE_SIZE = 50


@console_view
def job_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    params = {}
    name = request.GET.get("name", "").strip()[:32]
    if name:
        params["NameContains"] = name
    status = request.GET.get("status", "")
    if status in TuningJobStatus.values:
        params["StatusEquals"] = status
    rows = filtered_and_sorted(
        viewer.visible(HyperParameterTuningJob.objects.all()),
        {**sorting.chosen(request, tuning_services.SORT_FIELDS), **params},
        operation="ListHyperParameterTuningJobs",
        name_field="name",
        sort_fields=tuning_services.SORT_FIELDS,
        status_field="status",
    )
    context = {
        "page": Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page")),
        "statuses": TuningJobStatus.values,
        "status": status,
        "name": request.GET.get("name", ""),
    }
    return render(request, "console/tuning_jobs.html", context)


@resource_view(HyperParameterTuningJob)
def job_detail(request: HttpRequest, viewer: Viewer, job: HyperParameterTuningJob) -> HttpResponse:
    described = presenters.describe_tuning_job(job)
    context = {
        "job": job,
        "described": described,
        "best": described.get("BestTrainingJob"),
        "trials": _with_retried(trials.trials_of(job)),
        "objective": _objective(job),
    }
    return render(request, "console/tuning_job.html", context)


def _with_retried(found: list[trials.Trial]) -> list[tuple[trials.Trial, trials.Trial | None]]:
    """Each training job with the failed attempt it retries (None for a number's first attempt);
    `found` is by number, then attempt."""
    latest, listed = {}, []
    for trial in found:
        listed.append((trial, latest.get(trial.row.number)))
        latest[trial.row.number] = trial
    return listed


def _objective(job: HyperParameterTuningJob) -> dict:
    """The objective's Type and metric name; with several training job definitions, each
    definition's metric name, joined."""
    metrics = dict.fromkeys(definition.objective["MetricName"] for definition in definitions.of(job.request))
    return {"Type": trials.objective_type(job), "MetricName": " / ".join(metrics)}


@resource_view(HyperParameterTuningJob)
@require_POST
def job_stop(request: HttpRequest, viewer: Viewer, job: HyperParameterTuningJob) -> HttpResponse:
    params = {"HyperParameterTuningJobName": job.name}
    outcome = perform(viewer.context_for(job), "StopHyperParameterTuningJob", params)
    if outcome.ok:
        messages.success(request, f"Stopping {job.name}: its running training jobs are stopped.")
    else:
        messages.error(request, outcome.error)
    return redirect(address(viewer, job, "console:tuning-job"))
