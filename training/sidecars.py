"""The helper processes of one training job (Pipe feeders, checkpoint sync) and the reconcile
steps around them: defined and checkpoints restored while Downloading, kept running while
Training, stopped and the checkpoints synced one last time when the containers are done."""
from pathlib import Path

from accounts import s3_tenancy
from jobs import pipe_feeder, sidecars
from training import workspace
from training.data import checkpoint_sync
from training.data.channels import host_object_keys
from training.models import TrainingJob

PIPE = "Pipe"  # FastFile is staged like File: the algorithm reads the same files either way


def directory(job: TrainingJob) -> Path:
    return workspace.job_root(job) / "sidecars"


def pipe_channels(job: TrainingJob) -> list[dict]:
    return [channel for channel in job.request.get("InputDataConfig", []) if channel["InputMode"] == PIPE]


def prepare(job: TrainingJob, hosts: list[str]) -> None:
    """Define the helpers of `hosts` (this node's) and restore their checkpoints (idempotent,
    before containers start). A Pipe channel with no objects fails here, as a File channel does
    when staged."""
    every_host = workspace.host_names(job.request["ResourceConfig"]["InstanceCount"])
    for index, host in enumerate(every_host):  # each host's index picks its shard
        if host not in hosts:
            continue
        host_workspace = workspace.host_workspace(job, host)
        for channel in pipe_channels(job):
            objects = host_object_keys(job.account_id, channel, index, len(every_host))
            name = f"pipe-{host}-{channel['ChannelName']}"
            fifo = pipe_feeder.Fifo(
                "/opt/ml/input/data", channel["ChannelName"], channel.get("CompressionType") == "Gzip"
            )
            pipe_feeder.define(directory(job), name, host_workspace.data_dir, fifo, objects)
        if "CheckpointConfig" in job.request:
            helper = _checkpoint_helper(host)
            checkpoints = checkpoint_location(job)
            checkpoint_sync.define(directory(job), helper, host_workspace.checkpoint_dir, checkpoints)
            checkpoint_sync.restore(directory(job), helper)


def ensure_running(job: TrainingJob) -> str | None:
    """Start the helpers that do not run (again, after a crash); the reason to fail the job
    when one of them failed for good."""
    sidecars.ensure_all(directory(job))
    return sidecars.failure(directory(job))


def finish(job: TrainingJob, hosts: list[str]) -> None:
    """Stop the helpers, then sync the checkpoints one last time (the containers are done)."""
    stop(job)
    if "CheckpointConfig" in job.request:
        checkpoint_location(job)  # the bucket may have changed hands while the job ran
        for host in hosts:
            checkpoint_sync.final_sync(directory(job), _checkpoint_helper(host))


def checkpoint_location(job: TrainingJob) -> s3_tenancy.S3Location:
    return s3_tenancy.location(job.account_id, job.request["CheckpointConfig"]["S3Uri"], "write")


def stop(job: TrainingJob) -> None:
    sidecars.stop_all(directory(job))


def _checkpoint_helper(host: str) -> str:
    return f"checkpoints-{host}"
