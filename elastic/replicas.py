"""A HyperPodPyTorchJob's replica containers ("pods"): names, labels, network, and the
ContainerSpec built from a replica group's pod template.

Each replica runs the user's image as its template says (`command` replaces the entrypoint,
`args` the command, as in Kubernetes) with what AWS's agent expects of its pod: `NNODES`, and for
elastic jobs `HYPERPOD_SIGNAL_COORDINATION=distributed` (without it `elastic_event_detected()`
always answers False). The agent's port 8080 is published on the node's address, where the
operator reaches it (never through a bridge address). Each replica's first network is the job's
bridge on its node's engine, which publishes that port (a container on an overlay and on the
internal services network has no gateway bridge to publish on). The pods reach each other on the
job's pod network: that bridge when the job runs on one node, else a Swarm attachable overlay of
its own (`jobs/network.py`, as training's jobs across nodes), joined as a second network. The pod
network's subnet comes from the pool of `jobs/addresses.py`, and each pod has a fixed address in
it (its slot's, in rank order of the largest world), so that every replica's /etc/hosts names
every pod the job can ever have from the moment its container is created, on whichever node:
nothing is rewritten when a world starts. The first rank's pod name is the master address.
Volumes: a `persistentVolumeClaim` is a directory of the account's namespace under the node's
data directory (`<data>/volumes`), shared by every job of the namespace that names the claim
(FSx's role on HyperPod: a job spanning nodes shares it only if every node mounts one file system
there);
an `emptyDir` is the replica's own. Host paths are refused by the spec."""
import logging
from pathlib import Path

from django.conf import settings

from capacity import gpus
from clusters import membership, tier_network
from clusters.tier_network import TierReach
from elastic import sizing
from elastic.models import ElasticReplica, HyperPodJob
from elastic.spec import JobSpec, ReplicaGroup, VolumeMount
from gateway import network as gateway_network
from gateway.environment import container_reach
from jobs import addresses
from jobs import network as job_network
from jobs.identity import JobIdentity, JobKind
from jobs.identity import network_name as job_network_name
from logs import container_logs
from protocol import arns
from runtime import labels
from runtime.base import ContainerRuntime, ContainerSpec, ContainerState, Mount, RuntimeError_
from storage import safe_files

log = logging.getLogger(__name__)

AGENT_PORT = 8080
MASTER_PORT = 29500
_NANO_CPUS_PER_CPU = 1_000_000_000
LOG_GROUP_PREFIX = "/aws/sagemaker/HyperPodPyTorchJobs"
# What the shared container-job layer (jobs/) knows of a HyperPodPyTorchJob: its network's name
# (sageport-<stack>-hpj-<pk>) and labels, for `jobs/network.ensure`.
KIND = JobKind(name_part="hpj", role=labels.ELASTIC_ROLE, directory="elastic", log_group=LOG_GROUP_PREFIX,
               resource_type="hyperpod-pytorch-job")
# The same job's overlay, named apart: a swarm network is seen by every manager engine, beside
# each node's bridge of the job.
OVERLAY_KIND = JobKind(name_part="hpj-overlay", role=KIND.role, directory=KIND.directory,
                       log_group=KIND.log_group, resource_type=KIND.resource_type)


def holder_arn(job: HyperPodJob) -> str:
    """The job's identity for labels and container credentials (unique: the uid)."""
    return arns.make_arn(job.region, job.account_id, KIND.resource_type, job.uid)


def identity(job: HyperPodJob, kind: JobKind = KIND) -> JobIdentity:
    return JobIdentity(kind, job.pk, job.name, holder_arn(job), job.account_id, job.region, job.created_at)


def uid_of(holder: str) -> str:
    """The job uid a `holder_arn` names."""
    return holder.rpartition("/")[2]


def job_labels(job: HyperPodJob) -> dict[str, str]:
    return {labels.RESOURCE: holder_arn(job), labels.ROLE: labels.ELASTIC_ROLE}


def network_name(job: HyperPodJob) -> str:
    """The job's bridge on each of its nodes' engines."""
    return job_network_name(KIND, job.pk)


def overlay_name(job: HyperPodJob) -> str:
    """The job's overlay network, when its world spans nodes."""
    return job_network_name(OVERLAY_KIND, job.pk)


def container_name(job: HyperPodJob, group: str, index: int) -> str:
    return f"sageport-{settings.SAGEPORT_STACK_ID}-hpj-{job.pk}-{group}-{index}"


def next_container_name(job: HyperPodJob, replica: ElasticReplica) -> str:
    """The name of the pod's next container, when the one it has is to be replaced by the node
    that holds it (elastic/members.py): `<name>-g<N>`, N one more than the current one's."""
    first = container_name(job, replica.group, replica.index)
    suffix = replica.container_name[len(first) + len("-g"):]
    return f"{first}-g{int(suffix) + 1 if suffix.isdigit() else 1}"


def ensure_network(runtime: ContainerRuntime, job: HyperPodJob, spec: JobSpec) -> str:
    """The job's networks on this engine: its bridge, and its overlay when it spans nodes (made,
    or joined on the subnet the owner recorded); the pod network's subnet. Sized for the largest
    world: every pod of it has its fixed address (`pod_addresses`)."""
    largest = sizing.allowed_sizes(spec)[-1]
    if not job.overlay:
        return job_network.ensure(runtime, identity(job), largest, isolated=False,
                                  recorded=job.network_subnet).subnet
    runtime.ensure_network(network_name(job), job_labels(job))
    made = job_network.ensure(runtime, identity(job, OVERLAY_KIND), largest, isolated=False, overlay=True,
                              recorded=job.network_subnet)
    return made.subnet


def remove_network(runtime: ContainerRuntime, job: HyperPodJob) -> None:
    """Remove the job's networks from this engine. An overlay that a lost or slower node's
    containers are still attached to cannot go yet: left to the reaper once the job is gone
    (elastic/reaper.py)."""
    for name in (network_name(job), overlay_name(job)):
        try:
            runtime.remove_network(name)
        except RuntimeError_ as error:
            log.warning("hyperpod job %s: its network stays for now: %s", job, error)


def pod_addresses(job: HyperPodJob, spec: JobSpec, subnet: str) -> dict[str, str]:
    """Every pod the job can have (the largest world's) → its fixed address on the job network."""
    largest = sizing.slots(spec, sizing.allowed_sizes(spec)[-1])
    pods = [pod_name(job, group.name, index) for group, index in largest]
    return addresses.host_addresses(subnet, pods)


def start(
    runtime: ContainerRuntime, job: HyperPodJob, spec: JobSpec, group: ReplicaGroup, replica: ElasticReplica,
    subnet: str, tier: TierReach | None,
) -> ContainerState:
    """Run the replica's container on this engine (its node's), on the job network at its address."""
    container = container_spec(job, spec, group, replica, job.target_replicas, subnet, tier)
    gateway_network.ensure(runtime, container.extra_networks)
    return runtime.run(container)


def remove_strays(runtime: ContainerRuntime, job: HyperPodJob, node: str) -> None:
    """Remove the job's containers that this engine holds for `node` and no replica row of that
    node owns (released, replaced under a new name, or a lost node's old pod: `owns`), with their
    pods' files. The engine is listed before the rows are read: a row exists before its container."""
    found = [state for state in runtime.find(job_labels(job)) if state.labels.get(labels.NODE) == node]
    rows = dict(job.replicas.filter(node__name=node).values_list("container_name", "created_at"))
    for state in found:
        if state.name not in rows or not owns(rows[state.name], state):
            runtime.remove(state.name)
            safe_files.remove_tree(job_directory(job) / state.name)


def owns(row_created_at, state: ContainerState) -> bool:
    """Whether a container of a replica row's name is that row's, and not an older pod of the same
    name that a lost node kept while its slot was given again (to a new row, maybe on the node
    once it is back): a row's container starts after the row, and an old pod started before its
    node fell silent, at least SAGEPORT_NODE_LOST_AFTER_SECONDS less a heartbeat before the new
    row (the allowance for clocks that differ between hosts). Never started: the row's."""
    started = _started_ms(state)
    allowance = max(0.0, settings.SAGEPORT_NODE_LOST_AFTER_SECONDS - settings.SAGEPORT_NODE_HEARTBEAT_SECONDS)
    return started is None or started >= row_created_at.timestamp() * 1000 - allowance * 1000


def _started_ms(state: ContainerState) -> int | None:
    if not state.started_at or state.started_at.startswith("0001-"):  # Docker's zero time
        return None
    return container_logs.rfc3339_to_ms(state.started_at)


def kept_on_finish(spec: JobSpec, succeeded: bool, state: ContainerState | None) -> bool:
    """Whether a finished job's container stays (for its logs) until the job is deleted: every one
    of a succeeded job under cleanPodPolicy None (a failed job's go), the exited ones under
    Running (Kubeflow's: only the pods still running are deleted when the job ends)."""
    if spec.clean_pod_policy == "None":
        return succeeded
    return spec.clean_pod_policy == "Running" and getattr(state, "exited", False)


def pod_name(job: HyperPodJob, group: str, index: int) -> str:
    """The replica's host name and its name on the job network (what `master_addr` names)."""
    return f"{job.name}-{group}-{index}"[:63]


def container_spec(
    job: HyperPodJob, spec: JobSpec, group: ReplicaGroup, replica: ElasticReplica, nnodes: int,
    subnet: str, tier: TierReach | None = None,
) -> ContainerSpec:
    """`subnet`: the job network's; `tier`: the node's checkpoint tier, when its cluster enables one."""
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
    pods = pod_addresses(job, spec, subnet)
    return ContainerSpec(
        name=replica.container_name,
        image=group.image,
        labels={**job_labels(job), labels.HOST: name, labels.NODE: replica.node.name},
        entrypoint=list(group.command) if group.command is not None else None,
        command=list(group.args) if group.args is not None else None,
        environment=environment,
        mounts=(
            Mount(str(fresh_hosts_file(job, replica, pods, tier)), "/etc/hosts", read_only=True),
            Mount(str(_made(checkpointing_log_directory(job, replica))), tier_network.LIBRARY_LOG_PATH),
            *(_mount(job, replica, volume) for volume in group.volume_mounts),
        ),
        network=network_name(job),
        hostname=name,
        working_dir=group.working_dir,
        network_aliases=(name,),
        ipv4_address=None if job.overlay else pods[name],
        extra_networks=((overlay_name(job),) if job.overlay else ()) + reach.networks
        + ((tier.network,) if tier else ()),
        extra_addresses=((overlay_name(job), pods[name]),) if job.overlay else (),
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


def fresh_hosts_file(
    job: HyperPodJob, replica: ElasticReplica, pods: dict[str, str], tier: TierReach | None
) -> Path:
    """A new container's: localhost, every pod of the job at its fixed address, the tier's name."""
    path = hosts_file(job, replica)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_hosts(path, pods, tier)
    return path


def write_hosts(path: Path, names: dict[str, str], tier: TierReach | None = None) -> None:
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
