"""Uploading what a training job leaves in /opt/ml/model and /opt/ml/output/data (jobs/outputs.py
packs and uploads).

All instances' model directories are merged into ONE model.tar.gz (SageMaker's contract); with
`CompressionType: NONE` the files go uncompressed under `<job>/output/model/`. Output data goes
to output.tar.gz beside the model."""

from accounts import s3_tenancy
from jobs import outputs
from training import workspace
from training.models import TrainingJob
from training.presenters import output_base_uri


def output_location(job: TrainingJob) -> s3_tenancy.S3Location:
    """Where the job's artifacts go, once its bucket is checked to be the job's account's."""
    return outputs.location(job.account_id, output_base_uri(job))


def upload(job: TrainingJob, host_names: list[str]) -> None:
    hosts = [workspace.host_workspace(job, host) for host in host_names]
    where = output_location(job)
    if job.request["OutputDataConfig"].get("CompressionType") == "NONE":
        outputs.upload_files([host.model_dir for host in hosts], where, "model")
    else:
        outputs.upload_archive([host.model_dir for host in hosts], where, "model.tar.gz")
    logs = [host.checkpointing_log_root for host in hosts if host.checkpointing_log_root.is_dir()]
    outputs.upload_archive([host.output_data_dir for host in hosts] + logs, where, "output.tar.gz")
