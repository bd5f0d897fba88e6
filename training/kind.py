"""Training jobs as one kind of container job (jobs/identity.py): the word in their container and
network names, their containers' role, their workspaces' folder and their log group."""
from jobs.identity import JobIdentity, JobKind
from runtime import labels
from training.models import TrainingJob

TRAINING_LOG_GROUP = "/aws/sagemaker/TrainingJobs"
# "jobs": the folder training's workspaces have always had (<data>/jobs/<id>-<name>).
TRAINING = JobKind(
    name_part="train",
    role=labels.TRAINING_ROLE,
    directory="jobs",
    log_group=TRAINING_LOG_GROUP,
    resource_type="training-job",
)


def identity(job: TrainingJob) -> JobIdentity:
    return JobIdentity(
        kind=TRAINING,
        id=job.pk,
        name=job.training_job_name,
        arn=job.training_job_arn,
        account_id=job.account_id,
        region=job.region,
        creation_time=job.creation_time,
    )
