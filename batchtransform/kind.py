"""Transform jobs as one kind of container job (jobs/identity.py): the word in their container and
network names, their containers' role, their workspaces' folder and their log group."""

from batchtransform.models import TransformJob
from jobs.identity import JobIdentity, JobKind
from runtime import labels

TRANSFORM_LOG_GROUP = "/aws/sagemaker/TransformJobs"
TRANSFORM = JobKind(
    name_part="transform",
    role=labels.TRANSFORM_ROLE,
    directory="transform-jobs",
    log_group=TRANSFORM_LOG_GROUP,
    resource_type="transform-job",
)


def identity(job: TransformJob) -> JobIdentity:
    return JobIdentity(
        kind=TRANSFORM,
        id=job.pk,
        name=job.transform_job_name,
        arn=job.transform_job_arn,
        account_id=job.account_id,
        region=job.region,
        creation_time=job.creation_time,
    )
