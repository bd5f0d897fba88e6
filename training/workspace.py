"""The host side of a training container's /opt/ml tree (the per-host workspace every container
job has, jobs/workspace.py, with training's directories and config files).

Layout: `<data>/jobs/<pk>-<name>/<host>/{input/config,input/data,model,output/data,checkpoints}`,
bind-mounted read-write at /opt/ml/input, /opt/ml/model, /opt/ml/output and (only when
configured) CheckpointConfig.LocalPath; the platform writes the config files before the container
starts, exactly as SageMaker documents them, and `<host>/hosts`, the container's /etc/hosts
(read-only; jobs/addresses.py says why it is ours).

/opt/ml/input is writable, as on SageMaker (SDK v3's command `chmod +x`es its driver script in a
channel; toolkits unpack code next to the data). Why that is safe:
- every instance has its own copy of its input (config files written and channels staged from
  S3 per host, never shared, never hard-linked: a link would let one container's write show in
  another's tree), so what one instance changes no other sees;
- a retry (RetryStrategy) removes the whole workspace by descriptor and stages everything again
  from S3, so it never sees what the lost attempt changed;
- the worker writes the input tree only before the host's container exists (config, staging);
  while it runs, only the Pipe feeder works in it, by descriptor on the data directory it opened
  without following links (`jobs/pipe_feeder`), and nothing of it is ever read back.
Staging per instance costs no extra copy: each host's share comes straight from S3."""

from dataclasses import dataclass
from pathlib import Path

from jobs import identity
from jobs import workspace as job_workspace
from jobs.workspace import host_names, is_directory_name
from runtime.base import Mount
from training import kind
from training.models import TrainingJob

NETWORK_INTERFACE_NAME = "eth0"
INSTANCE_GROUP_NAME = "homogeneousCluster"
DEFAULT_CHECKPOINT_PATH = "/opt/ml/checkpoints"
FAILURE_FILE = "failure"  # in /opt/ml/output
_MAX_UTF8_BYTES = 4  # per character


@dataclass(frozen=True)
class HostWorkspace:
    root: Path
    checkpoint_path: str | None = None  # CheckpointConfig.LocalPath in the container, if any

    @property
    def input_dir(self) -> Path:
        return self.root / "input"

    @property
    def config_dir(self) -> Path:
        return self.root / "input" / "config"

    @property
    def data_dir(self) -> Path:
        return self.root / "input" / "data"

    def channel_dir(self, channel_name: str) -> Path:
        if not is_directory_name(channel_name):
            raise ValueError(f"Channel name {channel_name!r} cannot be a directory under input/data")
        return self.data_dir / channel_name

    @property
    def model_dir(self) -> Path:
        return self.root / "model"

    @property
    def output_dir(self) -> Path:
        return self.root / "output"

    @property
    def output_data_dir(self) -> Path:
        return self.root / "output" / "data"

    @property
    def checkpoint_dir(self) -> Path:
        return self.root / "checkpoints"

    @property
    def checkpointing_log_root(self) -> Path:
        """Packed into output.tar.gz beside the output data: `sagemaker_checkpointing/<host>/`."""
        return self.root / "checkpointing-logs"

    @property
    def checkpointing_log_dir(self) -> Path:
        """Mounted where the tier library writes its log. Created by Sageport, beside the
        container's trees, so no container can swap it for a link before a restart mounts it."""
        return self.checkpointing_log_root / "sagemaker_checkpointing" / self.root.name

    @property
    def hosts_file(self) -> Path:
        return self.root / job_workspace.HOSTS_FILE  # beside the mounted trees, in none it can write

    def mounts(self) -> tuple[Mount, ...]:
        mounts = (
            Mount(str(self.input_dir), "/opt/ml/input"),  # writable: see the module's docstring
            Mount(str(self.model_dir), "/opt/ml/model"),
            Mount(str(self.output_dir), "/opt/ml/output"),
            job_workspace.hosts_mount(self.root),
        )
        if self.checkpoint_path:
            mounts += (Mount(str(self.checkpoint_dir), self.checkpoint_path),)
        return mounts

    def write_hosts(self, names: dict[str, str]) -> None:
        job_workspace.write_hosts(self.root, names)

    def failure_description(self, limit: int = 1024) -> str:
        """The first `limit` characters the algorithm wrote to /opt/ml/output/failure, if any
        (read without trusting the container: jobs/workspace.head_of_container_file)."""
        head = job_workspace.head_of_container_file(self.output_dir, FAILURE_FILE, limit * _MAX_UTF8_BYTES)
        return head.decode("utf-8", errors="replace")[:limit].strip()


def job_root(job: TrainingJob) -> Path:
    return identity.job_root(kind.identity(job))


def host_workspace(job: TrainingJob, host: str) -> HostWorkspace:
    root = job_workspace.host_root(kind.identity(job), host)
    return HostWorkspace(root, checkpoint_local_path(job.request))


def checkpoint_local_path(request: dict) -> str | None:
    """Where the container sees its checkpoints (CheckpointConfig.LocalPath), if configured."""
    if "CheckpointConfig" not in request:
        return None
    return request["CheckpointConfig"].get("LocalPath") or DEFAULT_CHECKPOINT_PATH


def prepare(job: TrainingJob, only: list[str]) -> None:
    """Create the trees of the hosts in `only` (this node's) afresh and write their config files;
    the configs name every host of the job. Called before any container of the attempt exists: a
    tree an earlier attempt left on this node (a job that spans nodes may come back to a node
    after a retry) is removed first, so none of its files reach this attempt's artifacts."""
    hosts = host_names(job.request["ResourceConfig"]["InstanceCount"])
    for host in only:
        workspace = host_workspace(job, host)
        directories = [workspace.config_dir, workspace.data_dir, workspace.model_dir]
        directories.append(workspace.output_data_dir)
        if workspace.checkpoint_path:
            directories.append(workspace.checkpoint_dir)
        job_workspace.create_afresh(workspace.root, directories)
        config = workspace.config_dir
        job_workspace.write_json(config / "hyperparameters.json", job.request.get("HyperParameters", {}))
        job_workspace.write_json(config / "inputdataconfig.json", input_data_config(job.request))
        job_workspace.write_json(config / "resourceconfig.json", resource_config(job.request, host, hosts))


def input_data_config(request: dict) -> dict:
    """Only the keys that apply to each channel, as SageMaker writes them."""
    config = {}
    for channel in request.get("InputDataConfig", []):
        source = channel["DataSource"]["S3DataSource"]
        entry = {}
        if "ContentType" in channel:
            entry["ContentType"] = channel["ContentType"]
        entry["TrainingInputMode"] = channel["InputMode"]
        entry["S3DistributionType"] = source["S3DataDistributionType"]
        entry["RecordWrapperType"] = channel["RecordWrapperType"]
        if channel.get("CompressionType", "None") != "None":
            entry["CompressionType"] = channel["CompressionType"]
        config[channel["ChannelName"]] = entry
    return config


def resource_config(request: dict, current_host: str, hosts: list[str]) -> dict:
    instance_type = request["ResourceConfig"]["InstanceType"]
    return {
        "current_host": current_host,
        "current_instance_type": instance_type,
        "current_group_name": INSTANCE_GROUP_NAME,
        "hosts": hosts,
        "instance_groups": [
            {"instance_group_name": INSTANCE_GROUP_NAME, "instance_type": instance_type, "hosts": hosts}
        ],
        "network_interface_name": NETWORK_INTERFACE_NAME,
    }


def remove(job: TrainingJob) -> None:
    job_workspace.remove(kind.identity(job))
