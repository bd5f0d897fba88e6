"""What a processing job's containers look like to the engine (jobs/containers.py builds the
spec), and what their ending means for ExitMessage and FailureReason."""
from capacity import gpus
from jobs import containers as job_containers
from jobs import network as job_network
from jobs.workspace import host_names
from processing import kind, placement, workspace
from processing.models import ProcessingJob
from runtime.base import ContainerSpec, ContainerState

# What SageMaker's FailureReason says of a processing container that exited non-zero: the detail
# is in its logs (CloudWatch) and in ExitMessage (/opt/ml/output/message).
ALGORITHM_ERROR = "AlgorithmError: See job logs for more information"


def instance_count(job: ProcessingJob) -> int:
    return job.request["ProcessingResources"]["ClusterConfig"]["InstanceCount"]


def hosts(job: ProcessingJob) -> list[str]:
    return host_names(instance_count(job))


def isolated(job: ProcessingJob) -> bool:
    return job.request.get("NetworkConfig", {}).get("EnableNetworkIsolation", False)


def needs_network(job: ProcessingJob) -> bool:
    return job_network.needs_network(isolated(job), instance_count(job))


def spec_for(job: ProcessingJob, host: str, subnet: str | None) -> ContainerSpec:
    """`docker run [--entrypoint ContainerEntrypoint] ImageUri [ContainerArguments]`, as "How
    Amazon SageMaker Processing Runs Your Processing Container Image" says: neither given runs
    the image's own ENTRYPOINT and CMD."""
    app = job.request["AppSpecification"]
    entrypoint, command = job_containers.command(
        app.get("ContainerEntrypoint"), app.get("ContainerArguments"), default=None
    )
    held = placement.placement_of(job, host)
    capacity = job_containers.InstanceCapacity(
        held.node.name, held.nano_cpus, held.memory_bytes, gpus.gpu_ids(held)
    )
    return job_containers.instance_spec(
        kind.identity(job),
        host,
        hosts(job),
        image=app["ImageUri"],
        entrypoint=entrypoint,
        command=command,
        isolated=isolated(job),
        role_arn=job.request.get("RoleArn"),
        capacity=capacity,
        subnet=subnet,
        user_environment=job.request.get("Environment", {}),
        job_environment={},
        mounts=workspace.mounts(job, host),
    )


def host_entries(job: ProcessingJob, host: str, subnet: str | None) -> dict[str, str]:
    return job_network.host_entries(host, hosts(job), isolated(job), subnet)


def failure_reason(job: ProcessingJob, host: str, state: ContainerState) -> str:
    if state.oom_killed:
        cluster = job.request["ProcessingResources"]["ClusterConfig"]
        return (
            f"OutOfMemoryError: the processing container on {host} was killed for exceeding the "
            f"memory of {cluster['InstanceType']} (exit code {state.exit_code})."
        )
    return ALGORITHM_ERROR
