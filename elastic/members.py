"""A node's share of the HyperPodPyTorchJobs whose replicas it holds without owning them (a world
spanning nodes: elastic/planner.py). The owner (`HyperPodJob.node`) runs the job's steps
(elastic/operator.py) and does everything for its own replicas; it reaches every agent over HTTP
at its node's address, but never another node's engine or disk. Each other node of the job does
the per-replica work on its engine, in `sync(pk)`, which its queue carries after every step of
the owner (elastic/tasks.py), and tells the owner what it saw through the replica rows:

- the job gone: what no job owns is removed from this engine (elastic/reaper.py);
- the job owned by this node (ownership moved here after the share was sent): nothing;
- its containers' output copied to their pods' log streams (elastic/replica_logs.py);
- the job's containers here that no replica row of this node names removed, with their pod's
  files: a replica released (its row deleted), or replaced (the owner gave its row the name of a
  next container: `replace`);
- Creating, once the owner recorded the network's subnet, or a resize up under way (Stopping):
  this node's missing containers of the world run on the job's overlay network, joined by name,
  at their fixed addresses (their /etc/hosts names every pod: elastic/replicas.py);
- a finished job: its containers here kept as cleanPodPolicy says, the others removed;
- each replica's container as seen written into its row (`ElasticReplica.report`), from which
  the owner builds its state (`state_of`): the agent's published port, running or exited."""
import logging

from django.conf import settings

from capacity import nodes
from clusters import tier_network
from elastic import planner, reaper, replica_logs, replicas, sizing
from elastic.models import FINISHED_PHASES, ElasticReplica, HyperPodJob, JobPhase, StopReason
from runtime import host_locks
from runtime.base import ContainerState
from runtime.docker import get_runtime

log = logging.getLogger(__name__)

# The longest a share waits for another of the same job on this node (each takes well under a
# second: listing the job's containers, copying their output, starting a missing one).
SHARE_WAIT_SECONDS = 10.0


def sync(pk: int) -> None:
    """One share at a time per job on this node: the owner sends one after each of its steps, and
    the node's worker children would otherwise run two at once, both starting the same missing
    pod. A share that waits longer than SHARE_WAIT_SECONDS leaves: the one under way acts, and the
    owner's next step sends another."""
    here = nodes.local_name()
    key = f"{settings.SAGEPORT_STACK_ID}-{pk}-{here}"
    try:
        with host_locks.held("elastic-members", key, SHARE_WAIT_SECONDS):
            _sync(pk, here)
    except host_locks.Busy:
        log.info("hyperpod job %s: a share is under way on %s for %.0f s; leaving this one", pk, here,
                 SHARE_WAIT_SECONDS)


def _sync(pk: int, here: str) -> None:
    runtime = get_runtime()
    job = HyperPodJob.objects.select_related("node").filter(pk=pk).first()
    if job is None:
        reaper.reap_elastic_orphans()
        return
    if job.node is not None and job.node.name == here:
        # The owner's steps do everything for its replicas. A share still reaches it when another
        # live worker ran a step (the owner was lost) that made this node the owner; acting on it
        # here would race the owner's own step on the same engine (its container created while
        # that step removed the job's network, left unable to start).
        return
    replica_logs.collect(job, runtime)
    if job.phase in FINISHED_PHASES:
        _keep_on_finish(job)
        return
    replicas.remove_strays(runtime, job, here)
    mine = list(job.replicas.filter(node__name=here).select_related("node"))
    states = {state.name: state for state in runtime.find(replicas.job_labels(job))}
    if (job.phase == JobPhase.CREATING or _growing(job)) and job.network_subnet and mine:
        _start_missing(job, mine, states)
    for replica in mine:
        report(replica, states.get(replica.container_name))


def _growing(job: HyperPodJob) -> bool:
    """A resize up on the job's overlay under way: the new replicas start while the world stops
    gracefully, as the owner's own do (operator._grow)."""
    resizing = job.phase == JobPhase.STOPPING and job.stop_reason == StopReason.RESIZE
    return resizing and job.overlay and job.target_replicas > job.world_size


def _start_missing(job: HyperPodJob, mine: list[ElasticReplica], states: dict[str, ContainerState]) -> None:
    spec = planner.spec_of(job)
    runtime = get_runtime()
    world = {(group.name, index): group for group, index in sizing.slots(spec, job.target_replicas)}
    missing = [r for r in mine if (r.group, r.index) in world
               and (states.get(r.container_name) is None or states[r.container_name].never_started)]
    if not missing:
        return
    subnet = replicas.ensure_network(runtime, job, spec)
    tier = tier_network.reach_for(runtime, nodes.local_name(), isolated=False)
    for replica in missing:
        states[replica.container_name] = replicas.start(
            runtime, job, spec, world[(replica.group, replica.index)], replica, subnet, tier)


def _keep_on_finish(job: HyperPodJob) -> None:
    spec = planner.spec_of(job)
    runtime = get_runtime()
    for state in runtime.find(replicas.job_labels(job)):
        if not replicas.kept_on_finish(spec, job.phase == JobPhase.SUCCEEDED, state):
            runtime.remove(state.name)


def report(replica: ElasticReplica, state: ContainerState | None) -> None:
    seen = None if state is None else {
        "name": state.name, "id": state.id, "status": state.status, "exit_code": state.exit_code,
        "oom_killed": state.oom_killed, "host_port": state.host_port,
    }
    ElasticReplica.objects.filter(pk=replica.pk, container_name=replica.container_name).update(report=seen)


def state_of(replica: ElasticReplica) -> ContainerState | None:
    """The replica's container as its node last reported it; None when it reported none (yet)."""
    seen = replica.report
    if not seen or seen.get("name") != replica.container_name:
        return None
    return ContainerState(
        name=seen["name"], id=seen["id"], status=seen["status"], exit_code=seen["exit_code"],
        oom_killed=seen["oom_killed"], labels={}, host_port=seen["host_port"],
    )


def replace(job: HyperPodJob, replica: ElasticReplica) -> None:
    """Have the replica's node replace its container: the row names the next one (its node removes
    the current one, and starts the next in Creating); what it reported goes with the old one."""
    replica.container_name = replicas.next_container_name(job, replica)
    replica.report = None
    ElasticReplica.objects.filter(pk=replica.pk).update(container_name=replica.container_name, report=None)
