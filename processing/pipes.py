"""Pipe-mode inputs of a processing job: each host's share of the input's S3 objects streamed
into FIFOs while the container runs, by the shared Pipe feeder (jobs/pipe_feeder.py, a helper
process per host and input, jobs/sidecars.py), inflated first when S3CompressionType is Gzip.

Where the FIFOs appear: AWS documents only that in Pipe mode "SageMaker streams input data from
the source directly to your processing container into named pipes" (API reference,
ProcessingS3Input.S3InputMode), not their names. Sageport follows the Pipe contract SageMaker
documents for training ("How Amazon SageMaker Provides Training Information": a File channel is
the directory /opt/ml/input/data/<channel>, a Pipe channel the FIFOs
/opt/ml/input/data/<channel>_<epoch>): a Pipe input's FIFOs are `<LocalPath>_<epoch>`, the
first `<LocalPath>_0`, and the next appears once the container has read one to its end (or
closed it). The directory beside LocalPath that holds them is mounted for them
(processing/workspace.py); nothing else may use it as its own LocalPath (processing/requests.py)."""
from pathlib import Path, PurePosixPath

from jobs import pipe_feeder, sidecars, staging
from jobs import workspace as job_workspace
from processing import kind, workspace
from processing.models import ProcessingJob
from processing.requests import PIPE


def directory(job: ProcessingJob) -> Path:
    return job_workspace.job_root(kind.identity(job)) / "sidecars"


def prepare(job: ProcessingJob, hosts: list[str]) -> None:
    """Define every host's feeders (idempotent, before the containers start). A Pipe input with
    no objects fails here, as a File input does when staged (jobs/staging.InputError)."""
    where = {path: index for index, path in enumerate(workspace.pipe_directories(job))}
    for host_index, host in enumerate(hosts):
        host_workspace = workspace.host_workspace(job, host)
        for index, item in workspace.inputs(job, PIPE):
            source = item["S3Input"]
            local = PurePosixPath(source["LocalPath"])
            objects = staging.host_objects(job.account_id, workspace.s3_input(item), host_index, len(hosts))
            fifo = pipe_feeder.Fifo(str(local.parent), local.name, source["S3CompressionType"] == "Gzip")
            fifo_dir = host_workspace.pipe_dir(where[str(local.parent)])
            pipe_feeder.define(directory(job), f"pipe-{host}-{index}", fifo_dir, fifo, objects)


def ensure_running(job: ProcessingJob) -> str | None:
    """Start the feeders that do not run (again, after a crash); the reason to fail the job when
    one of them failed for good."""
    if not directory(job).exists():
        return None  # no Pipe input
    sidecars.ensure_all(directory(job))
    return sidecars.failure(directory(job))


def stop(job: ProcessingJob) -> None:
    if directory(job).exists():
        sidecars.stop_all(directory(job))
