"""Processing jobs as one kind of container job (jobs/identity.py): the word in their container
and network names, their containers' role, their workspaces' folder and their log group
(SageMaker's: /aws/sagemaker/ProcessingJobs)."""
from jobs.identity import JobIdentity, JobKind
from processing.models import ProcessingJob
from runtime import labels

PROCESSING_LOG_GROUP = "/aws/sagemaker/ProcessingJobs"
PROCESSING = JobKind(
    name_part="processing",
    role=labels.PROCESSING_ROLE,
    directory="processing-jobs",
    log_group=PROCESSING_LOG_GROUP,
    resource_type="processing-job",
)


def identity(job: ProcessingJob) -> JobIdentity:
    return JobIdentity(
        kind=PROCESSING,
        id=job.pk,
        name=job.processing_job_name,
        arn=job.processing_job_arn,
        account_id=job.account_id,
        region=job.region,
        creation_time=job.creation_time,
    )
