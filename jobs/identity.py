"""Who a container job is to the engine, the disk and CloudWatch, whatever its kind.

A feature describes its kind once (`JobKind`: the word in its container and network names, its
containers' role label, its workspaces' folder, its log group) and builds a `JobIdentity` from
its row; every shared function takes that, so that two kinds of job with the same id and name
never share a container, a network, a workspace or a log stream."""
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings

from runtime import labels


@dataclass(frozen=True)
class JobKind:
    name_part: str  # in container and network names: sageport-<stack>-<name_part>-<id>
    role: str  # the `sageport.role` label of its containers and networks
    directory: str  # its workspaces: <data dir>/<directory>/<id>-<job name>
    log_group: str  # its CloudWatch log group, e.g. /aws/sagemaker/TrainingJobs
    resource_type: str  # in its ARNs: arn:aws:sagemaker:<region>:<account>:<resource_type>/<name>


@dataclass(frozen=True)
class JobIdentity:
    kind: JobKind
    id: int
    name: str
    arn: str
    account_id: str
    region: str
    creation_time: datetime


# Names carry the stack id: installations (and test sessions) sharing one engine number their jobs
# from 1 each, and a name taken by another one would be mistaken for this job's container.
def container_name(job: JobIdentity, host: str) -> str:
    return f"{network_name(job.kind, job.id)}-{host}"


def network_name(kind: JobKind, job_id: int) -> str:
    return f"sageport-{settings.SAGEPORT_STACK_ID}-{kind.name_part}-{job_id}"


def job_labels(job: JobIdentity) -> dict[str, str]:
    """What finds every container and the network of the job (and nothing else)."""
    return {labels.RESOURCE: job.arn, labels.ROLE: job.kind.role}


def kind_root(kind: JobKind) -> Path:
    return Path(settings.DATA_DIR) / kind.directory


def job_root(job: JobIdentity) -> Path:
    return kind_root(job.kind) / f"{job.id}-{job.name}"
