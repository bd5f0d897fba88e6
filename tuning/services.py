"""Mutations and queries of tuning jobs, scoped to the caller's account and region."""
import logging
import secrets

from django.db import IntegrityError, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ResourceInUse, ResourceNotFound
from protocol.listing import PreparedListing, ordering
from protocol.pagination import paginate
from tuning import requests, transitions, trials, warm_start
from tuning.models import HyperParameterTuningJob
from tuning.models import TuningJobStatus as Status
from tuning.tasks import reconcile_tuning_job

log = logging.getLogger(__name__)

RESOURCE_TYPE = "hyper-parameter-tuning-job"
# The seeds drawn for Random searches without a RandomSeed: within RandomSeed's own range.
MAX_SEED = 2**31 - 1


def create_tuning_job(ctx: RequestContext, params: dict) -> HyperParameterTuningJob:
    requests.check_create_request(params)
    warm_start.check(ctx, params)
    name = params["HyperParameterTuningJobName"]
    arn = make_arn(ctx.region, ctx.account_id, RESOURCE_TYPE, name)
    config = params["HyperParameterTuningJobConfig"]
    now = timezone.now()
    try:
        with transaction.atomic():
            job = HyperParameterTuningJob.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                name=name,
                arn=arn,
                request=requests.as_stored(params),
                tags=params.get("Tags", []),
                seed=config.get("RandomSeed", secrets.randbelow(MAX_SEED)),
                creation_time=now,
                last_modified_time=now,
                next_check_at=now,
            )
            transaction.on_commit(lambda: nudge(job.pk))
    except IntegrityError:
        raise ResourceInUse(f"Hyperparameter tuning job {name} already exists ({arn}).") from None
    return job


def nudge(job_id: int) -> None:
    """Ask a worker to look at the job now. The job is already committed: when the broker cannot
    take the message, the sweeper finds the job overdue later, so the request still succeeds."""
    try:
        reconcile_tuning_job.delay(job_id)
    except OperationalError as exc:
        log.warning("could not enqueue tuning job %s (%s); the sweeper will pick it up", job_id, exc)


def get_tuning_job(ctx: RequestContext, name: str) -> HyperParameterTuningJob:
    arn = make_arn(ctx.region, ctx.account_id, RESOURCE_TYPE, name)
    jobs = HyperParameterTuningJob.objects.filter(account_id=ctx.account_id, region=ctx.region)
    job = jobs.filter(arn=arn).first()
    if job is None:
        # SageMaker's answer for a tuning job that does not exist (ResourceNotFound, 400).
        raise ResourceNotFound(f"Amazon SageMaker can't find a tuning job with name {name}")
    return job


def stop_tuning_job(ctx: RequestContext, name: str) -> None:
    """InProgress → Stopping; the worker stops the running training jobs, then Stopped. Stopping a
    tuning job that is stopping already, or has ended, changes nothing."""
    for _ in range(5):
        job = get_tuning_job(ctx, name)
        if job.status != Status.IN_PROGRESS:
            return
        if transitions.transition(job, Status.STOPPING, next_check_at=timezone.now()):
            nudge(job.pk)
            return


SORT_FIELDS = {"Name": "name", "CreationTime": "creation_time", "Status": "status"}

# ListHyperParameterTuningJobs' pages, compiled once per query shape (protocol/listing.py).
_listing = PreparedListing(
    lambda account_id, region: HyperParameterTuningJob.objects.filter(account_id=account_id, region=region),
    operation="ListHyperParameterTuningJobs",
    name_field="name",
    sort_fields=SORT_FIELDS,
    status_field="status",
)


def list_tuning_jobs(ctx: RequestContext, params: dict) -> tuple[list[HyperParameterTuningJob], str | None]:
    return _listing.page(ctx.account_id, ctx.region, params)


TRIAL_SORT_KEYS = {
    "Name": lambda trial: trial.row.training_job_name,
    "CreationTime": lambda trial: trial.job.creation_time,
    "Status": lambda trial: trial.job.training_job_status,
    "FinalObjectiveMetricValue": lambda trial: trial.objective,
}


def list_trials(job: HyperParameterTuningJob, params: dict) -> tuple[list[trials.Trial], str | None]:
    """ListTrainingJobsForHyperParameterTuningJob: the training jobs created so far, filtered and
    sorted in memory (a tuning job has few). Sorted by FinalObjectiveMetricValue, those that did
    not report the objective are left out, as the operation's documentation says."""
    found = [trial for trial in trials.trials_of(job) if trial.job is not None]
    if "StatusEquals" in params:
        found = [trial for trial in found if trial.job.training_job_status == params["StatusEquals"]]
    sort_by, sort_order = ordering("ListTrainingJobsForHyperParameterTuningJob", params)
    if sort_by == "FinalObjectiveMetricValue":
        found = [trial for trial in found if trial.objective is not None]
    found.sort(key=lambda trial: (TRIAL_SORT_KEYS[sort_by](trial), trial.row.number, trial.row.attempt),
               reverse=sort_order == "Descending")
    return paginate(found, params.get("NextToken"), params.get("MaxResults"))
