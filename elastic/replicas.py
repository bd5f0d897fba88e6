"""A HyperPodPyTorchJob's replica containers ("pods"): names, labels, network, and the
ContainerSpec built from a replica group's pod template.

Each replica runs the user's image as its template says (`command` replaces the entrypoint,
`args` the command, as in Kubernetes) with what AWS's agent expects of its pod: `NNODES`, and for
elastic jobs `HYPERPOD_SIGNAL_COORDINATION=distributed` (without it `elastic_event_detected()`
always answers False). The agent's port 8080 is published on the node's address, where the
operator reaches it (never through a bridge address). The replicas of a job share a bridge
network on their node, where each is known by its pod name; the first rank's is the master
address. Volumes: a `persistentVolumeClaim` is a directory of the account's namespace under the
node's data directory, shared by every job of the namespace that names the claim (FSx's role on
HyperPod); an `emptyDir` is the replica's own. Host paths are refused by the spec."""
from pathlib import Path

from django.conf import settings

from capacity import gpus
from clusters import membership, tier_network
from clusters.tier_network import TierReach
from elastic.models import ElasticReplica, HyperPodJob
from elastic.spec import JobSpec, ReplicaGroup, VolumeMount
from gateway.environment import container_reach
from protocol import arns
from runtime import labels
from runtime.base import ContainerSpec, Mount

AGENT_PORT = 8080
MASTER_PORT = 29500
_NANO_CPUS_PER_CPU = 1_000_000_000


def holder_arn(job: HyperPodJob) -> str:
    """The job's identity for labels and container credentials (unique: the uid)."""
    return arns.make_arn(job.region, job.account_id, "hyperpod-pytorch-job", job.uid)


def uid_of(holder: str) -> str:
    """The job uid a `holder_arn` names."""
    return holder.rpartition("/")[2]


def job_labels(job: HyperPodJob) -> dict[str, str]:
    return {labels.RESOURCE: holder_arn(job), labels.ROLE: labels.ELASTIC_ROLE}


def network_name(job: HyperPodJob) -> str:
    return f"sageport-{settings.SAGEPORT_STACK_ID}-hpj-{job.pk}"


def container_name(job: HyperPodJob, group: str, index: int) -> str:
    return f"sageport-{settings.SAGEPORT_STACK_ID}-hpj-{job.pk}-{group}-{index}"


def pod_name(job: HyperPodJob, group: str, index: int) -> str:
    """The replica's host name and its name on the job network (what `master_addr` names)."""
    return f"{job.name}-{group}-{index}"[:63]


def container_spec(
    job: HyperPodJob, spec: JobSpec, group: ReplicaGroup, replica: ElasticReplica, nnodes: int,
    tier: TierReach | None = None,
) -> ContainerSpec:
    """`tier`: the node's checkpoint tier, when its cluster enables one."""
    environment = _environment(job, spec, group, replica, nnodes)
    visible, device_ids = gpus.device_selection(gpus.gpu_ids(replica))
    environment["NVIDIA_VISIBLE_DEVICES"] = visible  # last: the template cannot widen it
    reach = container_reach(
        isolated=False,
        holder=holder_arn(job),
        account_id=job.account_id,
        region=job.region,
        role_arn=membership.execution_role(replica.node, job.account_id),
    )
    environment = {**reach.environment, **environment}
    name = pod_name(job, group.name, replica.index)
    return ContainerSpec(
        name=replica.container_name,
        image=group.image,
        labels={**job_labels(job), labels.HOST: name, labels.NODE: replica.node.name},
        entrypoint=list(group.command) if group.command is not None else None,
        command=list(group.args) if group.args is not None else None,
        environment=environment,
        mounts=(
            Mount(str(fresh_hosts_file(job, replica, tier)), "/etc/hosts", read_only=True),
            Mount(str(_made(checkpointing_log_directory(job, replica))), tier_network.LIBRARY_LOG_PATH),
            *(_mount(job, replica, volume) for volume in group.volume_mounts),
        ),
        network=network_name(job),
        hostname=name,
        working_dir=group.working_dir,
        network_aliases=(name,),
        extra_networks=reach.networks + ((tier.network,) if tier else ()),
        nano_cpus=int(group.cpus * _NANO_CPUS_PER_CPU) if group.cpus else None,
        memory_bytes=group.memory_bytes,
        gpu_device_ids=device_ids,
        published_port=AGENT_PORT,
        published_address=replica.node.address,
    )


def _environment(job, spec, group, replica, nnodes) -> dict[str, str]:
    environment = dict(group.env)
    environment.update({
        # The agent reads NNODES once, at start-up (its rendezvous backend); each /start then
        # says the world's actual size.
        "NNODES": str(nnodes),
        "POD_NAME": pod_name(job, group.name, replica.index),
        "POD_NAMESPACE": job.namespace,
        "JOB_NAME": job.name,
        "REPLICA_GROUP": group.name,
        # torchrun's (and so hyperpodrun's) default for --nproc-per-node: the spec's nprocPerNode
        # applies unless the command line gives the flag.
        "PET_NPROC_PER_NODE": spec.nproc_per_node,
    })
    if spec.elastic is not None:
        environment["HYPERPOD_SIGNAL_COORDINATION"] = "distributed"
    return environment


def hosts_file(job: HyperPodJob, replica: ElasticReplica) -> Path:
    """The replica's /etc/hosts, a file of ours (mounted read-only): Docker's lists the pod's name
    once per network, and the resolver prefers the services network's link-local address, where
    no peer reaches it (gloo binds to the address its host name resolves to)."""
    return replica_directory(job, replica) / "hosts"


def fresh_hosts_file(job: HyperPodJob, replica: ElasticReplica, tier: TierReach | None) -> Path:
    """A new container's: localhost and the tier's name until the world starts; `write_hosts`
    then names every replica of the world."""
    path = hosts_file(job, replica)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_hosts(path, {}, tier)
    return path


def write_hosts(path: Path, names: dict[str, str], tier: TierReach | None = None) -> None:
    """Rewritten in place (same inode): the running container sees the file it was given."""
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    entries = {**names, **(tier.host_entries() if tier else {})}
    lines += [f"{address}\t{name}" for name, address in entries.items()]
    with open(path, "w") as hosts:
        hosts.write("\n".join(lines) + "\n")


def checkpointing_log_directory(job: HyperPodJob, replica: ElasticReplica) -> Path:
    """Where the replica's `amzn-sagemaker-checkpointing` writes its log (elastic/checkpointing.py)."""
    return replica_directory(job, replica) / "checkpointing-logs"


def _made(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def replica_directory(job: HyperPodJob, replica: ElasticReplica) -> Path:
    return job_directory(job) / replica.container_name


def job_directory(job: HyperPodJob) -> Path:
    """The node's files of the job's replicas (hosts files, emptyDir volumes)."""
    return Path(settings.DATA_DIR) / "elastic" / str(job.pk)


def _mount(job: HyperPodJob, replica: ElasticReplica, volume: VolumeMount) -> Mount:
    return Mount(str(volume_directory(job, replica, volume)), volume.mount_path, volume.read_only)


def volume_directory(job: HyperPodJob, replica: ElasticReplica, volume: VolumeMount) -> Path:
    """Where a volume lives on the node, created on first use. Names are DNS labels (the spec
    checked them), so each is one directory name."""
    if volume.kind == "persistentVolumeClaim":
        directory = claims_root() / job.account_id / job.namespace / volume.source
    else:
        directory = replica_directory(job, replica) / "volumes" / volume.source
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def claims_root() -> Path:
    return Path(settings.DATA_DIR) / "volumes"
