"""What an earlier attempt of a retried job left on this node's engine.

A retry after a lost node may place the new attempt's instances on any live node, and the step
that restarts the job runs on whichever worker took it (the lost attempt's placements are freed
at once). So every node that takes a share of the new attempt (the job's node in
`reconciler._start`, a member in `member.sync`) first retires the containers an earlier attempt
left on its own engine. Left there, a still-running or failed container of the lost attempt would
be taken for the new attempt's instance of the same host: its AlgorithmError (a peer's reset
connection) would fail the retried job."""

from capacity import nodes
from runtime import labels
from runtime.base import ContainerRuntime, ContainerState
from training import containers
from training import sidecars as training_sidecars
from training.models import TrainingJob


def retire_earlier(runtime: ContainerRuntime, job: TrainingJob) -> None:
    """Stop the earlier attempt's helpers here, sync its checkpoints one last time (as the job's
    node does for its own before a restart), then remove its containers, so that none is ever
    taken for the new attempt's."""
    if containers_here(runtime, job):
        training_sidecars.finish(job, containers.hosts(job))
        remove_containers_here(runtime, job)


def containers_here(runtime: ContainerRuntime, job: TrainingJob) -> list[ContainerState]:
    return runtime.find({**containers.job_labels(job), labels.NODE: nodes.local_name()})


def remove_containers_here(runtime: ContainerRuntime, job: TrainingJob) -> None:
    for state in containers_here(runtime, job):
        runtime.remove(state.name)
