"""Uploading what a training job leaves in /opt/ml/model and /opt/ml/output/data.

All instances' model directories are merged into ONE model.tar.gz (SageMaker's contract); with
`CompressionType: NONE` the files go uncompressed under `<job>/output/model/`. Output data goes
to output.tar.gz beside the model."""

from storage import archives, s3
from training import workspace
from training.models import TrainingJob
from training.presenters import output_base_uri


def upload(job: TrainingJob, host_names: list[str]) -> None:
    hosts = [workspace.host_workspace(job, host) for host in host_names]
    bucket, prefix = s3.parse_s3_uri(output_base_uri(job))
    staging = workspace.job_root(job)
    if job.request["OutputDataConfig"].get("CompressionType") == "NONE":
        for host in hosts:
            s3.upload_tree(host.model_dir, bucket, f"{prefix}/model")
    else:
        model_archive = staging / "model.tar.gz"
        archives.pack_tar_gz([host.model_dir for host in hosts], model_archive)
        s3.upload_file(model_archive, bucket, f"{prefix}/model.tar.gz")
        model_archive.unlink()
    output_archive = staging / "output.tar.gz"
    logs = [host.checkpointing_log_root for host in hosts if host.checkpointing_log_root.is_dir()]
    archives.pack_tar_gz([host.output_data_dir for host in hosts] + logs, output_archive)
    s3.upload_file(output_archive, bucket, f"{prefix}/output.tar.gz")
    output_archive.unlink()
