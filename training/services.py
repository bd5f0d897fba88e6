"""Mutations and queries of training jobs, scoped to the caller's account and region."""

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ResourceInUse, ValidationException
from protocol.listing import PreparedListing
from protocol.pagination import paginate
from protocol.prepared import PreparedQuery
from training import requests, transitions
from training.models import TrainingJob, TrainingJobStatus
from training.tasks import reconcile_training_job

log = logging.getLogger(__name__)

NOT_FOUND_MESSAGE = "Requested resource not found."


def jobs_of(ctx: RequestContext):
    return TrainingJob.objects.filter(account_id=ctx.account_id, region=ctx.region)


def create_training_job(ctx: RequestContext, params: dict, tuning_job_arn: str | None = None) -> TrainingJob:
    """`tuning_job_arn`: the hyperparameter tuning job launching this one (DescribeTrainingJob's
    TuningJobArn, kept in the stored request Describe shows)."""
    requests.check_create_request(params)
    name = params["TrainingJobName"]
    arn = make_arn(ctx.region, ctx.account_id, "training-job", name)
    now = timezone.now()
    request = requests.with_defaults(params)
    if tuning_job_arn is not None:
        request["TuningJobArn"] = tuning_job_arn
    try:
        with transaction.atomic():
            job = TrainingJob.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                training_job_name=name,
                training_job_arn=arn,
                request=request,
                tags=params.get("Tags", []),
                creation_time=now,
                last_modified_time=now,
                next_check_at=now,
            )
            transitions.record_creation(job)
            transaction.on_commit(lambda: _nudge(job.pk))
    except IntegrityError:
        raise ResourceInUse(
            "Training job names must be unique within an AWS account and region, and a training job "
            f"with this name already exists ({arn})"
        ) from None
    return job


def _nudge(job_id: int) -> None:
    """Ask a worker to look at the job now. The job is already committed: when the broker cannot
    take the message, the sweeper finds the job overdue later, so the request still succeeds."""
    try:
        reconcile_training_job.delay(job_id)
    except OperationalError as exc:
        log.warning("could not enqueue training job %s (%s); the sweeper will pick it up", job_id, exc)


# Read by every DescribeTrainingJob (and StopTrainingJob): compiled once (protocol/prepared.py).
# The ARN is unique, so one row at most, in no particular order.
_job_by_arn = PreparedQuery(
    lambda account_id, region, arn: TrainingJob.objects.filter(
        account_id=account_id, region=region, training_job_arn=arn
    )[:1],
    str, str, str,
)


def get_training_job(ctx: RequestContext, name: str) -> TrainingJob:
    arn = make_arn(ctx.region, ctx.account_id, "training-job", name)
    found = _job_by_arn(ctx.account_id, ctx.region, arn)
    if not found:
        raise ValidationException(NOT_FOUND_MESSAGE)
    return found[0]


def training_jobs_named(account_id: str, region: str, names: list[str]) -> dict[str, TrainingJob]:
    """The account's training jobs of these names, by name (those that exist)."""
    jobs = TrainingJob.objects.filter(account_id=account_id, region=region, training_job_name__in=names)
    return {job.training_job_name: job for job in jobs}


def stop_training_job(ctx: RequestContext, name: str) -> None:
    """InProgress → Stopping; the worker sends SIGTERM, then SIGKILL after the grace period.

    A compare-and-set can lose against the worker moving the job on; then reload and decide again."""
    for _ in range(5):
        job = get_training_job(ctx, name)
        if job.training_job_status == TrainingJobStatus.STOPPING:
            return
        if job.training_job_status != TrainingJobStatus.IN_PROGRESS:
            raise ValidationException(
                f"The training job {name} is in status {job.training_job_status} and cannot be stopped: "
                "only an InProgress job can be stopped."
            )
        if transitions.transition(job, transitions.STOPPING_STATE, next_check_at=timezone.now()):
            _nudge(job.pk)
            return
    raise ValidationException(f"The training job {name} changed status while stopping it; try again.")


# What a ListTrainingJobs summary shows (presenters.training_job_summary): the stored request, the
# largest column, is neither read nor decoded for a page.
SUMMARY_FIELDS = (
    "training_job_name", "training_job_arn", "creation_time", "training_end_time", "last_modified_time",
    "training_job_status", "secondary_status",
)
SORT_FIELDS = {"Name": "training_job_name", "CreationTime": "creation_time", "Status": "training_job_status"}


# ListTrainingJobs' pages, compiled once per query shape (protocol/listing.py).
_listing = PreparedListing(
    lambda account_id, region: TrainingJob.objects.filter(account_id=account_id, region=region).only(
        *SUMMARY_FIELDS
    ),
    operation="ListTrainingJobs",
    name_field="training_job_name",
    sort_fields=SORT_FIELDS,
    status_field="training_job_status",
)


def list_training_jobs(ctx: RequestContext, params: dict) -> tuple[list[TrainingJob], str | None]:
    """The page of the caller's jobs that ListTrainingJobs asks for, and the next page's token."""
    if "WarmPoolStatusEquals" in params or "TrainingPlanArnEquals" in params:
        # Sageport has neither warm pools nor training plans: an empty page (the token still checked).
        return paginate([], params.get("NextToken"), params.get("MaxResults"))
    return _listing.page(ctx.account_id, ctx.region, params)
