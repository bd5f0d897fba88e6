"""What a training job's containers look like to the engine, and what their ending means."""

from capacity import gpus
from clusters import tier_network
from clusters.tier_network import TierReach
from jobs import containers as job_containers
from jobs import identity, log_streams
from jobs import network as job_network
from logs.models import LogStream
from runtime.base import ContainerSpec, ContainerState, Mount
from training import kind, modelparallel, scheduler, workspace
from training.models import TrainingJob

FAILURE_REASON_LIMIT = 1024
ALGORITHM_ERROR = "AlgorithmError: "  # what user code matches on in a FailureReason


def container_name(job: TrainingJob, host: str) -> str:
    return identity.container_name(kind.identity(job), host)


def network_name(job: TrainingJob) -> str:
    return identity.network_name(kind.TRAINING, job.pk)


def job_labels(job: TrainingJob) -> dict[str, str]:
    return identity.job_labels(kind.identity(job))


def needs_network(job: TrainingJob) -> bool:
    return job_network.needs_network(job.request["EnableNetworkIsolation"], instance_count(job))


def instance_count(job: TrainingJob) -> int:
    return job.request["ResourceConfig"]["InstanceCount"]


def hosts(job: TrainingJob) -> list[str]:
    return workspace.host_names(instance_count(job))


def spec_for(
    job: TrainingJob, host: str, subnet: str | None = None, tier: TierReach | None = None
) -> ContainerSpec:
    """`docker run IMAGE train` (jobs/containers.py builds it). `subnet`: the job network's
    (jobs/network.py), None when the job has no network; `tier`: its node's checkpoint tier
    service, when its cluster enables one (clusters/tier_network.py)."""
    algorithm = job.request["AlgorithmSpecification"]
    entrypoint, command = job_containers.command(
        algorithm.get("ContainerEntrypoint"), algorithm.get("ContainerArguments"), default=["train"]
    )
    placement = scheduler.placement_of(job, host)
    capacity = job_containers.InstanceCapacity(
        placement.node.name, placement.nano_cpus, placement.memory_bytes, gpus.gpu_ids(placement)
    )
    # Set after the request's Environment: it cannot rename the job, nor change the topology
    # Sageport's launcher started.
    job_environment = {"TRAINING_JOB_NAME": job.training_job_name, "TRAINING_JOB_ARN": job.training_job_arn}
    job_environment.update(modelparallel.launch_environment(job.request, hosts(job), host))
    return job_containers.instance_spec(
        kind.identity(job),
        host,
        hosts(job),
        image=algorithm["TrainingImage"],
        entrypoint=entrypoint,
        command=command,
        isolated=job.request["EnableNetworkIsolation"],
        role_arn=job.request.get("RoleArn"),
        capacity=capacity,
        subnet=subnet,
        user_environment=job.request.get("Environment", {}),
        job_environment=job_environment,
        mounts=_mounts(job, host, tier),
        extra_networks=(tier.network,) if tier else (),
        python_paths=_library_paths(job),
        ssh_server=modelparallel.runs_sshd(job.request),
        launcher=modelparallel.launcher(job.request, hosts(job), host, len(capacity.gpu_ids)),
    )


def _mounts(job: TrainingJob, host: str, tier: TierReach | None) -> tuple[Mount, ...]:
    return workspace.host_workspace(job, host).mounts() + _library_mounts(job) + _tier_mount(job, host, tier)


def _library_mounts(job: TrainingJob) -> tuple[Mount, ...]:
    return (modelparallel.library_mount(),) if modelparallel.modelparallel_enabled(job.request) else ()


def _tier_mount(job: TrainingJob, host: str, tier: TierReach | None) -> tuple[Mount, ...]:
    """The tier library's log directory, kept by Sageport: it outlives the container and goes
    into output.tar.gz (training/artifacts.py)."""
    if tier is None:
        return ()
    log_dir = workspace.host_workspace(job, host).checkpointing_log_dir
    return (Mount(str(log_dir), tier_network.LIBRARY_LOG_PATH),)


def _library_paths(job: TrainingJob) -> tuple[str, ...]:
    enabled = modelparallel.modelparallel_enabled(job.request)
    return (modelparallel.LIBRARY_CONTAINER_PATH,) if enabled else ()


def host_entries(
    job: TrainingJob, host: str, subnet: str | None, tier: TierReach | None = None
) -> dict[str, str]:
    """What the container's /etc/hosts names (jobs/network.py), and the checkpoint tier's service
    name when `tier` (a lone isolated instance has no tier: it has no network)."""
    entries = job_network.host_entries(host, hosts(job), job.request["EnableNetworkIsolation"], subnet)
    if not needs_network(job):
        return entries
    return {**entries, **(tier.host_entries() if tier else {})}


def failure_reason(job: TrainingJob, host: str, state: ContainerState) -> str:
    """The failure file framed as SageMaker frames it (`AlgorithmError: <text>, exit code: N`,
    the text cut so the whole fits in 1024 characters); otherwise the exit code and the log tail."""
    suffix = f", exit code: {state.exit_code}"
    room = FAILURE_REASON_LIMIT - len(ALGORITHM_ERROR) - len(suffix)
    described = workspace.host_workspace(job, host).failure_description(room)
    if described:
        return f"{ALGORITHM_ERROR}{described}{suffix}"
    if state.oom_killed:
        head = (
            f"OutOfMemoryError: the algorithm on {host} was killed for exceeding the memory of "
            f"{job.request['ResourceConfig']['InstanceType']} (exit code {state.exit_code})."
        )
    else:
        head = f"AlgorithmError: the algorithm on {host} exited with exit code {state.exit_code}."
    tail = "\n".join(log_streams.tail(kind.identity(job), host))
    if not tail:
        return head
    room = FAILURE_REASON_LIMIT - len(head) - len(" Last output:\n")
    return f"{head} Last output:\n{tail[-room:]}" if room > 0 else head[:FAILURE_REASON_LIMIT]


def training_stream(job: TrainingJob, host: str) -> LogStream:
    """The log stream of one instance's container (the CloudWatch name SageMaker gives it)."""
    return log_streams.stream(kind.identity(job), host)
