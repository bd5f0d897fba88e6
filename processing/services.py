"""Mutations and queries of processing jobs, scoped to the caller's account and region."""
import logging

from django.db import IntegrityError, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from processing import requests, transitions
from processing.kind import PROCESSING
from processing.models import ProcessingJob, ProcessingJobStatus
from processing.tasks import reconcile_processing_job
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ResourceInUse, ValidationException
from protocol.listing import PreparedListing

log = logging.getLogger(__name__)

NOT_FOUND_MESSAGE = "Requested resource not found."


def create_processing_job(ctx: RequestContext, params: dict) -> ProcessingJob:
    requests.check_create_request(params)
    name = params["ProcessingJobName"]
    arn = make_arn(ctx.region, ctx.account_id, PROCESSING.resource_type, name)
    now = timezone.now()
    try:
        with transaction.atomic():
            job = ProcessingJob.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                processing_job_name=name,
                processing_job_arn=arn,
                request=requests.with_defaults(params),
                tags=params.get("Tags", []),
                creation_time=now,
                last_modified_time=now,
                phase_started_at=now,
                next_check_at=now,
            )
            transaction.on_commit(lambda: _nudge(job.pk))
    except IntegrityError:
        raise ResourceInUse(
            "Processing job names must be unique within an AWS account and region, and a processing "
            f"job with this name already exists ({arn})"
        ) from None
    return job


def _nudge(job_id: int) -> None:
    """Ask a worker to look at the job now. The job is already committed: when the broker cannot
    take the message, the sweeper finds the job overdue later, so the request still succeeds."""
    try:
        reconcile_processing_job.delay(job_id)
    except OperationalError as exc:
        log.warning("could not enqueue processing job %s (%s); the sweeper will pick it up", job_id, exc)


def get_processing_job(ctx: RequestContext, name: str) -> ProcessingJob:
    arn = make_arn(ctx.region, ctx.account_id, PROCESSING.resource_type, name)
    jobs = ProcessingJob.objects.filter(account_id=ctx.account_id, region=ctx.region)
    job = jobs.filter(processing_job_arn=arn).first()
    if job is None:
        raise ValidationException(NOT_FOUND_MESSAGE)
    return job


def stop_processing_job(ctx: RequestContext, name: str) -> None:
    """InProgress → Stopping; the worker sends SIGTERM, then SIGKILL after the grace period.
    A compare-and-set can lose against the worker moving the job on; then reload and decide again."""
    for _ in range(5):
        job = get_processing_job(ctx, name)
        if job.processing_job_status == ProcessingJobStatus.STOPPING:
            return
        if job.processing_job_status != ProcessingJobStatus.IN_PROGRESS:
            raise ValidationException(
                f"The processing job {name} is in status {job.processing_job_status} and cannot be "
                "stopped: only an InProgress job can be stopped."
            )
        if transitions.transition(job, transitions.STOPPING, next_check_at=timezone.now()):
            _nudge(job.pk)
            return
    raise ValidationException(f"The processing job {name} changed status while stopping it; try again.")


# What a ListProcessingJobs summary shows: the stored request, the largest column, is not read.
SUMMARY_FIELDS = (
    "processing_job_name", "processing_job_arn", "creation_time", "processing_end_time",
    "last_modified_time", "processing_job_status", "failure_reason", "exit_message",
)
SORT_FIELDS = {
    "Name": "processing_job_name", "CreationTime": "creation_time", "Status": "processing_job_status"
}

# ListProcessingJobs' pages, compiled once per query shape (protocol/listing.py).
_listing = PreparedListing(
    lambda account_id, region: ProcessingJob.objects.filter(account_id=account_id, region=region).only(
        *SUMMARY_FIELDS
    ),
    operation="ListProcessingJobs",
    name_field="processing_job_name",
    sort_fields=SORT_FIELDS,
    status_field="processing_job_status",
)


def list_processing_jobs(ctx: RequestContext, params: dict) -> tuple[list[ProcessingJob], str | None]:
    """The page of the caller's jobs that ListProcessingJobs asks for, and the next page's token."""
    return _listing.page(ctx.account_id, ctx.region, params)
