"""Removing what a container job used: at its end (`remove_resources`), and what a job that ended
without its clean-up (a crash between its terminal status and the removal, a node lost) left
behind (`listed_leftovers`, then `reap`): containers, its network, workspaces and its
containers' credentials. Only this installation's: they carry its stack id.

The engine and the disk are listed BEFORE the feature asks its database which jobs are live:
anything listed belongs to a job that already existed, so a job created meanwhile is never reaped."""
import shutil
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from accounts import container_credentials
from jobs import workspace
from jobs.identity import JobIdentity, JobKind, job_labels, kind_root, network_name
from runtime import labels
from runtime.base import ContainerRuntime, ContainerState


def remove_resources(runtime: ContainerRuntime, job: JobIdentity, keep_network: bool = False) -> None:
    """The job's containers, its containers' keys, its network and its workspace on this node.
    `keep_network`: for a job that starts again at once, on the same network (by name). A swarm
    overlay network that a lost node's containers were attached to cannot be removed while the
    swarm still counts that node's attachments, which a restart must not wait for."""
    remove_containers(runtime, job)
    remove_surroundings(runtime, job, keep_network)


def remove_containers(runtime: ContainerRuntime, job: JobIdentity) -> None:
    """The job's containers and their keys: what holds the node's capacity or could still act."""
    for state in runtime.find(job_labels(job)):
        runtime.remove(state.name)
    container_credentials.revoke(job.arn)  # its containers are gone: so are their keys


def remove_surroundings(runtime: ContainerRuntime, job: JobIdentity, keep_network: bool = False) -> None:
    """The job's network and workspace, once its containers are gone. Holding nothing, they may
    go after the job's end is written: a crash before leaves them to `reap`."""
    if not keep_network:
        runtime.remove_network(network_name(job.kind, job.id))
    workspace.remove(job)


@dataclass(frozen=True)
class Leftovers:
    kind: JobKind
    containers: list[ContainerState]
    networks: list[str]
    workspaces: list[tuple[int, Path]]  # (job id, its workspace root)
    credential_holders: set[str]


def listed_leftovers(runtime: ContainerRuntime, kind: JobKind) -> Leftovers:
    """Everything of `kind` on this engine and disk, live or not: list it before the live jobs."""
    selector = {labels.ROLE: kind.role, labels.STACK: settings.SAGEPORT_STACK_ID}
    return Leftovers(
        kind=kind,
        containers=runtime.find(selector),
        networks=runtime.find_networks(selector),
        workspaces=_workspace_dirs(kind),
        credential_holders=container_credentials.holders(kind.resource_type),
    )


def reap(runtime: ContainerRuntime, found: Leftovers, live_arns: set[str], live_ids: set[int]) -> None:
    """Remove what `found` holds of jobs that are not live (read after `found` was listed)."""
    for state in found.containers:
        if state.labels.get(labels.RESOURCE) not in live_arns:
            runtime.remove(state.name)
    live_networks = {network_name(found.kind, job_id) for job_id in live_ids}
    for network in found.networks:
        if network not in live_networks:
            runtime.remove_network(network)
    for job_id, directory in found.workspaces:
        if job_id not in live_ids:
            shutil.rmtree(directory, ignore_errors=True)
    # Keys of jobs that ended without their clean-up (a node lost, a crash before it).
    container_credentials.revoke_ended(found.credential_holders, live_arns)


def _workspace_dirs(kind: JobKind) -> list[tuple[int, Path]]:
    root = kind_root(kind)
    if not root.is_dir():
        return []
    entries = []
    for entry in root.iterdir():
        prefix = entry.name.split("-", 1)[0]
        if prefix.isdigit():
            entries.append((int(prefix), entry))
    return entries
