"""Mutations and queries of transform jobs, scoped to the caller's account and region."""

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from batchtransform import requests
from batchtransform.models import TransformJob, TransformJobStatus
from batchtransform.tasks import run_transform_job
from hosting import services as hosting_services
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ResourceInUse, ValidationException
from protocol.listing import PreparedListing

log = logging.getLogger(__name__)

NOT_FOUND_MESSAGE = "Could not find requested job with name {name}"


def _arn(ctx: RequestContext, name: str) -> str:
    return make_arn(ctx.region, ctx.account_id, "transform-job", name)


def create_transform_job(ctx: RequestContext, params: dict) -> TransformJob:
    requests.check_create_request(params)
    # SageMaker reads the model when the job is created: a missing one is refused with its error.
    model = hosting_services.get_model(ctx, params["ModelName"])
    name = params["TransformJobName"]
    arn = _arn(ctx, name)
    now = timezone.now()
    try:
        with transaction.atomic():
            job = TransformJob.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                transform_job_name=name,
                transform_job_arn=arn,
                request={key: value for key, value in params.items() if key != "Tags"},
                model=model.request,
                tags=params.get("Tags", []),
                creation_time=now,
                last_modified_time=now,
                next_check_at=now,
            )
            transaction.on_commit(lambda: nudge(job.pk))
    except IntegrityError:
        raise ResourceInUse(
            "Job name must be unique within an AWS account and region, and a job with this name "
            f"already exists ({arn})"
        ) from None
    return job


def nudge(job_id: int) -> None:
    """Ask a worker to run the job now. The job is already committed: when the broker cannot take
    the message, the sweeper finds the job overdue later, so the request still succeeds."""
    try:
        run_transform_job.delay(job_id)
    except OperationalError as exc:
        log.warning("could not enqueue transform job %s (%s); the sweeper will pick it up", job_id, exc)


def get_transform_job(ctx: RequestContext, name: str) -> TransformJob:
    job = TransformJob.objects.filter(
        account_id=ctx.account_id, region=ctx.region, transform_job_arn=_arn(ctx, name)
    ).first()
    if job is None:
        raise ValidationException(NOT_FOUND_MESSAGE.format(name=name))
    return job


def stop_transform_job(ctx: RequestContext, name: str) -> None:
    """InProgress → Stopping; the worker running it stops sending, stops the containers and
    writes Stopped. Stopping a job that already ended is no error (SageMaker: "If you stop a
    transform job that has already completed, SageMaker does nothing")."""
    job = get_transform_job(ctx, name)
    updated = TransformJob.objects.filter(
        pk=job.pk, transform_job_status=TransformJobStatus.IN_PROGRESS
    ).update(
        transform_job_status=TransformJobStatus.STOPPING,
        last_modified_time=timezone.now(),
        next_check_at=timezone.now(),
    )
    if updated:
        nudge(job.pk)


# What a ListTransformJobs summary shows: the stored request is neither read nor decoded.
SUMMARY_FIELDS = (
    "transform_job_name",
    "transform_job_arn",
    "creation_time",
    "transform_end_time",
    "last_modified_time",
    "transform_job_status",
    "failure_reason",
)
SORT_FIELDS = {
    "Name": "transform_job_name",
    "CreationTime": "creation_time",
    "Status": "transform_job_status",
}

_listing = PreparedListing(
    lambda account_id, region: TransformJob.objects.filter(account_id=account_id, region=region).only(
        *SUMMARY_FIELDS
    ),
    operation="ListTransformJobs",
    name_field="transform_job_name",
    sort_fields=SORT_FIELDS,
    status_field="transform_job_status",
)


def list_transform_jobs(ctx: RequestContext, params: dict) -> tuple[list[TransformJob], str | None]:
    return _listing.page(ctx.account_id, ctx.region, params)
