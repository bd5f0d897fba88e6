"""What one instance's container of a container job looks like to the engine: the image and its
command, the world it reaches (gateway/environment: region, endpoints, its role's credentials,
or nothing when network-isolated), the job's network and fixed address, its GPUs and limits.

The feature gives what is its own: the command's default, its environment variables, its mounts
and any engine extras (a launcher, sshd); the order in which environments are laid over each
other is fixed here: the world the container reaches, then the request's Environment (which may
replace it, and the image's own variables, as SageMaker passes them through), then the job's own
variables (the request cannot rename the job), then the GPUs the scheduler gave it (never
widened)."""
from dataclasses import dataclass

from capacity import gpus
from gateway.environment import container_reach
from jobs import network
from jobs.identity import JobIdentity, container_name, job_labels
from runtime import labels
from runtime.base import ContainerSpec, Mount


@dataclass(frozen=True)
class InstanceCapacity:
    """What the scheduler gave one instance: its node, its limits, its GPUs."""

    node: str
    nano_cpus: int
    memory_bytes: int
    gpu_ids: tuple[str, ...] = ()


def command(
    entrypoint: list[str] | None, arguments: list[str] | None, default: list[str] | None
) -> tuple[list[str] | None, list[str] | None]:
    """(entrypoint, command) as `docker run` gets them: ContainerEntrypoint/ContainerArguments
    override, as in SageMaker; an entrypoint alone runs without the image's command; neither runs
    the image with `default` (training: `train`; None keeps the image's command)."""
    if arguments is not None:
        return entrypoint, arguments
    if entrypoint:
        return entrypoint, []
    return entrypoint, default


def instance_spec(
    job: JobIdentity,
    host: str,
    hosts: list[str],
    *,
    image: str,
    entrypoint: list[str] | None,
    command: list[str] | None,
    isolated: bool,
    role_arn: str | None,
    capacity: InstanceCapacity,
    subnet: str | None,
    user_environment: dict[str, str],
    job_environment: dict[str, str],
    mounts: tuple[Mount, ...],
    extra_networks: tuple[str, ...] = (),
    **engine,
) -> ContainerSpec:
    """The spec of `host`'s container (one of `hosts`). `subnet`: the job network's
    (jobs/network.py), None when it has none; `engine`: further ContainerSpec fields."""
    reach = container_reach(
        isolated=isolated, holder=job.arn, account_id=job.account_id, region=job.region, role_arn=role_arn
    )
    environment = {**reach.environment, **user_environment}
    environment.update(job_environment)
    environment["NVIDIA_VISIBLE_DEVICES"], gpu_ids = gpus.device_selection(capacity.gpu_ids)
    return ContainerSpec(
        name=container_name(job, host),
        image=image,
        labels={**job_labels(job), labels.HOST: host, labels.NODE: capacity.node},
        command=command,
        entrypoint=entrypoint,
        environment=environment,
        mounts=mounts,
        hostname=host,
        **network.container_settings(job, host, hosts, isolated, subnet),
        extra_networks=reach.networks + extra_networks,
        nano_cpus=capacity.nano_cpus,
        memory_bytes=capacity.memory_bytes,
        gpu_device_ids=gpu_ids,
        **engine,
    )
