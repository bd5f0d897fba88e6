"""The host side of a processing container's directories (the per-host workspace every container
job has, jobs/workspace.py, with processing's directories and config files).

Layout: `<data>/processing-jobs/<id>-<name>/<host>/` holding `config/` (mounted read-only at
/opt/ml/config: processingjobconfig.json and resourceconfig.json, as SageMaker writes them),
`output/` (/opt/ml/output, where the container may leave its exit message), `inputs/<i>/` (the
i-th ProcessingInput in File mode, mounted at its LocalPath), `pipes/<k>/` (the k-th directory
holding Pipe inputs' FIFOs, mounted there: processing/pipes.py) and `outputs/<i>/` (the i-th
output, mounted at its LocalPath, created before the container starts, as SageMaker documents),
and `hosts`, the container's /etc/hosts. Directories are numbered, not named after the request's
names, so no name can make a path. Every instance has its own tree, staged from S3 for it alone."""
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from jobs import staging
from jobs import workspace as job_workspace
from processing import kind
from processing.models import ProcessingJob
from processing.requests import FILE, PIPE
from runtime.base import Mount

EXIT_MESSAGE_FILE = "message"  # in /opt/ml/output: SageMaker's ExitMessage is its first 1 KB
EXIT_MESSAGE_LIMIT = 1024


class UndecodableMessage(ValueError):
    """The exit message is not UTF-8: SageMaker fails the job with a ClientError."""


@dataclass(frozen=True)
class HostWorkspace:
    root: Path

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def output_dir(self) -> Path:
        return self.root / "output"

    def input_dir(self, index: int) -> Path:
        return self.root / "inputs" / str(index)

    def pipe_dir(self, index: int) -> Path:
        return self.root / "pipes" / str(index)

    def output_data_dir(self, index: int) -> Path:
        return self.root / "outputs" / str(index)

    def exit_message(self) -> str:
        """The first 1 KB the container wrote to /opt/ml/output/message ("" if none), read without
        trusting the container (a symlink or FIFO there counts as no message)."""
        head = job_workspace.head_of_container_file(self.output_dir, EXIT_MESSAGE_FILE, EXIT_MESSAGE_LIMIT)
        try:
            return head.decode("utf-8")
        except UnicodeDecodeError as error:
            if error.reason == "unexpected end of data" and len(head) == EXIT_MESSAGE_LIMIT:
                return head[: error.start].decode("utf-8")  # a character cut by the 1 KB limit
            raise UndecodableMessage(str(error)) from None


def host_workspace(job: ProcessingJob, host: str) -> HostWorkspace:
    return HostWorkspace(job_workspace.host_root(kind.identity(job), host))


def inputs(job: ProcessingJob, mode: str) -> list[tuple[int, dict]]:
    """(index, ProcessingInput) of the inputs Sageport stages (AppManaged ones are the app's)
    whose S3InputMode is `mode` (File: staged before the container starts; Pipe: fed while it
    runs)."""
    return [
        (index, item) for index, item in enumerate(job.request.get("ProcessingInputs", []))
        if not item.get("AppManaged") and item["S3Input"]["S3InputMode"] == mode
    ]


def pipe_directories(job: ProcessingJob) -> list[str]:
    """The container directories where Pipe inputs' FIFOs appear (beside each one's LocalPath:
    processing/pipes.py), in order: the k-th is `pipes/<k>/` of every host."""
    return sorted({str(PurePosixPath(item["S3Input"]["LocalPath"]).parent) for _, item in inputs(job, PIPE)})


def s3_input(item: dict) -> staging.S3Input:
    """A ProcessingInput's S3Input as the shared staging reads it."""
    source = item["S3Input"]
    return staging.S3Input(
        noun="input",
        name=item["InputName"],
        uri=source["S3Uri"],
        data_type=source["S3DataType"],
        distribution=source["S3DataDistributionType"],
        container_dir=source["LocalPath"],
    )


def outputs(job: ProcessingJob) -> list[tuple[int, dict]]:
    """(index, ProcessingOutput) of the outputs Sageport uploads (AppManaged ones are the app's)."""
    configured = job.request.get("ProcessingOutputConfig", {}).get("Outputs", [])
    return [(index, item) for index, item in enumerate(configured) if not item.get("AppManaged")]


def mounts(job: ProcessingJob, host: str) -> tuple[Mount, ...]:
    workspace = host_workspace(job, host)
    found = [
        Mount(str(workspace.config_dir), "/opt/ml/config", read_only=True),
        Mount(str(workspace.output_dir), "/opt/ml/output"),
        job_workspace.hosts_mount(workspace.root),
    ]
    files = inputs(job, FILE)
    found += [Mount(str(workspace.input_dir(i)), item["S3Input"]["LocalPath"]) for i, item in files]
    found += [Mount(str(workspace.pipe_dir(k)), where) for k, where in enumerate(pipe_directories(job))]
    found += [
        Mount(str(workspace.output_data_dir(i)), item["S3Output"]["LocalPath"]) for i, item in outputs(job)
    ]
    return tuple(found)


def prepare(job: ProcessingJob, hosts: list[str]) -> None:
    """Create every host's tree afresh (what an earlier attempt left is removed first) and write
    its config files."""
    for host in hosts:
        workspace = host_workspace(job, host)
        directories = [workspace.config_dir, workspace.output_dir]
        directories += [workspace.input_dir(index) for index, _ in inputs(job, FILE)]
        directories += [workspace.pipe_dir(index) for index in range(len(pipe_directories(job)))]
        directories += [workspace.output_data_dir(index) for index, _ in outputs(job)]
        job_workspace.create_afresh(workspace.root, directories)
        config = workspace.config_dir
        job_workspace.write_json(config / "processingjobconfig.json", processing_job_config(job))
        job_workspace.write_json(config / "resourceconfig.json", resource_config(host, hosts))


def processing_job_config(job: ProcessingJob) -> dict:
    """/opt/ml/config/processingjobconfig.json: the job's request as SageMaker keeps it, with its
    name and ARN ("How SageMaker Processing Configures Your Processing Container")."""
    return {"ProcessingJobArn": job.processing_job_arn, **job.request}


def resource_config(current_host: str, hosts: list[str]) -> dict:
    """/opt/ml/config/resourceconfig.json: this container's host name and every host's."""
    return {"current_host": current_host, "hosts": hosts}


def remove(job: ProcessingJob) -> None:
    job_workspace.remove(kind.identity(job))
