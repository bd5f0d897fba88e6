"""Uploading what a training job leaves in /opt/ml/model and /opt/ml/output/data.

All instances' model directories are merged into ONE model.tar.gz (SageMaker's contract); with
`CompressionType: NONE` the files go uncompressed under `<job>/output/model/`. Output data goes
to output.tar.gz beside the model. Archives are packed straight into S3 (`archives.upload_tar_gz`):
no archive is written to the host's disk."""

from accounts import s3_tenancy
from storage import archives, s3
from training import workspace
from training.models import TrainingJob
from training.presenters import output_base_uri


def output_location(job: TrainingJob) -> s3_tenancy.S3Location:
    """Where the job's artifacts go, once its bucket is checked to be the job's account's."""
    return s3_tenancy.location(job.account_id, output_base_uri(job), "write")


def upload(job: TrainingJob, host_names: list[str]) -> None:
    hosts = [workspace.host_workspace(job, host) for host in host_names]
    bucket, prefix = output_location(job)
    if job.request["OutputDataConfig"].get("CompressionType") == "NONE":
        for host in hosts:
            s3.upload_tree(host.model_dir, bucket, f"{prefix}/model")
    else:
        archives.upload_tar_gz([host.model_dir for host in hosts], bucket, f"{prefix}/model.tar.gz")
    logs = [host.checkpointing_log_root for host in hosts if host.checkpointing_log_root.is_dir()]
    archives.upload_tar_gz([host.output_data_dir for host in hosts] + logs, bucket, f"{prefix}/output.tar.gz")
