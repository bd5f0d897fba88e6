"""The HyperPod training operator: one reconcile chain per HyperPodPyTorchJob, level-triggered and
restart-safe (every decision is made again from the rows, the containers and the agents' answers
at each look; nothing lives in memory between looks).

Phases (elastic/models.JobPhase):
- Pending: the planner (elastic/planner.py) finds a size and its nodes (one when one holds the
  world, else several: an overlay network), preempting lower weights if the job is short of
  GPUs; the replica rows and their GPUs are created, rank 0's node owns the job → Creating. The
  owner's worker runs every step and acts on its own engine only: another node's replicas are
  run, replaced and removed by that node (elastic/members.py), which reports their containers.
- Creating: every replica of the target world has a running container; once every agent answers
  `ready`, each is sent `/start` (rank, nnodes, master_addr = rank 0's pod name, faultCount, the
  agreed progress, the log rules) → Running.
- Running: agents all `completed` → `/shutdown` → Succeeded. A replica that faulted, exited or
  vanished → restarted as runPolicy.restartPolicy says (elastic/restarts.py), or Failed: a
  process-level restart keeps every pod (an exited container is run again in its pod) and tells
  every agent `/stop` → Stopping; a full job restart creates every pod again, the faulty ones'
  GPUs avoided (→ Stopping), or on another node than a repeat offender (→ Pending). A new
  target (preemption) or room to grow (planner.growth_size) → graceful `/stop` to every agent →
  Stopping; growing takes the new replicas' GPUs at once and starts their containers on the
  owner's engine during the stop, so that their agents are up when the world is re-formed.
- Stopping: wait until every agent is `ready` again (its workers saw SIGUSR1, checkpointed and
  exited); past `gracefulShutdownTimeoutInSeconds` (plus a margin: the agent SIGKILLs its workers
  at the timeout itself) a replica still stopping is removed. Then replicas beyond the target go,
  missing ones are created → Creating; an evicted job (target 0) goes back to Pending. A job
  short of a replica with no spare capacity waits `faultyScaleDownTimeoutInSeconds`, then
  continues at the largest allowed size it holds.
- A replica whose node was declared lost (Creating, Running, Stopping): a fault of every replica
  there that cannot restart in place, so a full job restart (or Failed, as the run policy says):
  the world restarts on the job's live nodes, the lost replicas replaced where there is room (or
  the job goes on smaller: Stopping's rule), the owner handed to a live node of the job when it
  was the one lost; with no live node left the job is placed again, like a new one, on live
  nodes (→ Pending). Either way it resumes from the agreed progress; these steps run on any live
  worker while the owner is lost (elastic/tasks.py).
- `runPolicy.suspend: true` (any phase but a finished one): the replicas and the network go at
  once, startTime is cleared → Suspended (condition `Suspended`, reason `JobSuspended`); back to
  false → Pending (`Suspended` False, reason `JobResumed`), placed again like a new job.
- `runPolicy.activeDeadlineSeconds` past the job's startTime (the start of its first world since
  it was submitted or resumed) → Failed, reason `DeadlineExceeded`, whatever the phase;
  `startupDeadlineSeconds` bounds the time in Creating (instead of the node's ready timeout).
- A finished job keeps the containers `cleanPodPolicy` keeps (None: all of a succeeded job;
  Running: the exited ones) until it is deleted; their GPUs are freed at once.
- A deletion removes the containers, the network and the rows, whatever the phase."""
import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from accounts import container_credentials
from capacity.models import Node
from clusters import tier_network
from elastic import checkpointing, members, planner, replica_logs, replicas, restarts, sizing, status
from elastic.agents import Agent, AgentUnreachable
from elastic.models import FINISHED_PHASES, ElasticReplica, HyperPodJob, JobPhase, StopReason
from elastic.spec import JobSpec
from reconcile.loop import reconcile_once
from runtime.base import ContainerState
from runtime.docker import get_runtime
from storage import safe_files

log = logging.getLogger(__name__)

# Beyond gracefulShutdownTimeoutInSeconds before a replica still stopping is removed: the agent
# itself SIGKILLs its workers at the timeout, and needs a moment to report `ready`.
FORCE_KILL_MARGIN_SECONDS = 10
# The stop timeout of a fault restart, or of a job without an elasticPolicy.
NON_ELASTIC_STOP_SECONDS = 30
# A job that leaves its nodes leaves its network: the next world's is made afresh.
_NO_NETWORK = {"overlay": False, "network_subnet": ""}
# During a transition (Creating, Stopping) the operator waits for the agents, which never call
# back: it looks again after this share of the time the phase has lasted, at least the minimum
# and at most the poll interval. A transition of t seconds is seen by about 1.25 t (a graceful
# stop of 1.2 s by 1.5 s, not at the next 2 s poll), at ~log(t) looks.
TRANSITION_POLL_SHARE = 0.25
TRANSITION_MIN_POLL_SECONDS = 0.2


def reconcile(pk: int) -> float | None:
    return reconcile_once(HyperPodJob, pk, _step, _give_up)


def _step(job: HyperPodJob, token: str) -> float | None:
    spec = planner.spec_of(job)
    replica_logs.collect(job, get_runtime())
    if job.deletion_requested_at is not None:
        return _delete(job)
    if job.phase in FINISHED_PHASES:
        return _finished(job, spec)
    if spec.suspend and job.phase != JobPhase.SUSPENDED:
        return _suspend(job, spec)
    left = _active_time_left(job, spec)
    if left is not None and left <= 0:
        limit = spec.active_deadline_seconds
        message = f"The job was active longer than its activeDeadlineSeconds ({limit} s)."
        return _finish(job, spec, JobPhase.FAILED, (status.FAILED, "DeadlineExceeded", message))
    lost = _on_lost_nodes(job)
    if lost:
        return _on_node_lost(job, spec, lost)
    after = _STEPS[job.phase](job, spec)
    return after if left is None or after is None else min(after, left)


def _poll() -> float:
    return settings.SAGEPORT_POLL_INTERVAL_SECONDS


def _transition_poll(job: HyperPodJob) -> float:
    """The next look while the agents are expected to change their answer (TRANSITION_POLL_SHARE)."""
    age = (timezone.now() - job.phase_since).total_seconds()
    return min(_poll(), max(TRANSITION_MIN_POLL_SECONDS, age * TRANSITION_POLL_SHARE))


# --- Pending -----------------------------------------------------------------------------------

def _pending(job: HyperPodJob, spec: JobSpec) -> float | None:
    plan = planner.plan_start(job, spec)
    if isinstance(plan, planner.NeverFits):
        return _finish(job, spec, JobPhase.FAILED, (status.FAILED, "Unschedulable", plan.reason))
    if isinstance(plan, planner.Wait):
        message = (plan.for_capacity and planner.reclaim_for(job, spec)) or plan.reason
        status.say(job, spec, message)
        return _poll()
    job.node = plan.node  # the owner: the replicas' first node, where rank 0 goes
    if planner.allocate(job, spec, plan.size):
        status.move(job, spec, JobPhase.CREATING, None, node=plan.node, target_replicas=plan.size,
                    overlay=_spans_nodes(job), network_subnet="")
        return 0.0  # its replicas are created at once
    return _poll()


# --- Suspended ---------------------------------------------------------------------------------

def _suspend(job: HyperPodJob, spec: JobSpec) -> float:
    """Kubeflow's suspend: every replica deleted at once (its GPUs back to the pool), startTime
    reset; the job keeps its fault count and the checkpoint progress its agents agreed on."""
    _release(job, spec, keep=0)
    replicas.remove_network(get_runtime(), job)
    condition = (status.SUSPENDED, "JobSuspended", "The job is suspended (spec.runPolicy.suspend is true).")
    status.move(
        job, spec, JobPhase.SUSPENDED, condition, node=None, world_size=0, target_replicas=0,
        stop_reason=StopReason.NONE, started_at=None, short_since=None, **_NO_NETWORK,
    )
    return _poll()


def _suspended(job: HyperPodJob, spec: JobSpec) -> float:
    if spec.suspend:
        return _poll()
    status.resume(job, spec)
    return 0.0


def _active_time_left(job: HyperPodJob, spec: JobSpec) -> float | None:
    """Seconds until activeDeadlineSeconds, counted from startTime; None without a deadline or
    before the job's world first started."""
    if spec.active_deadline_seconds is None or job.started_at is None:
        return None
    elapsed = (timezone.now() - job.started_at).total_seconds()
    return spec.active_deadline_seconds - elapsed


# --- Creating ----------------------------------------------------------------------------------

def _creating(job: HyperPodJob, spec: JobSpec) -> float | None:
    if job.target_replicas == 0:  # evicted before its world started
        _release(job, spec, keep=0)
        return _to_pending(job, spec)
    _release(job, spec, keep=job.target_replicas)
    world = _world(job, spec, job.target_replicas)
    runtime = get_runtime()
    replicas.remove_strays(runtime, job, job.node.name)  # replaced while another node owned the job
    subnet = replicas.ensure_network(runtime, job, spec)
    if subnet != job.network_subnet:  # the other nodes join the network on it
        HyperPodJob.objects.filter(pk=job.pk).update(network_subnet=subnet)
        job.network_subnet = subnet
    tier = tier_network.reach_for(runtime, job.node.name, isolated=False)
    states = _states(job)
    for group, replica in world:
        state = states.get(replica.container_name)
        if state is not None and state.exited:
            reason = f"Replica {replica.container_name} exited ({_exit(state)}) before the world started."
            return _on_fault(job, spec, [replica], reason)
        # Never started: its worker died in between. Another node's replicas are its own to start.
        if _here(job, replica) and (state is None or state.never_started):
            replicas.start(runtime, job, spec, group, replica, subnet, tier)
    answers = [_status_of(replica, states.get(replica.container_name)) for _, replica in world]
    if all(answer == "ready" for answer in answers):
        return _start_world(job, spec, [replica for _, replica in world], states)
    limit = spec.startup_deadline_seconds or settings.SAGEPORT_ELASTIC_READY_TIMEOUT_SECONDS
    if (timezone.now() - job.phase_since).total_seconds() > limit:
        waiting = [r.container_name for (_, r), a in zip(world, answers, strict=True) if a != "ready"]
        reason = f"Replicas not ready within {limit} s: {', '.join(waiting)}."
        return _finish(job, spec, JobPhase.FAILED, (status.FAILED, "ReplicasNotReady", reason))
    return _transition_poll(job)


def _start_world(job: HyperPodJob, spec: JobSpec, world: list[ElasticReplica], states: dict) -> float:
    """Every pod already names every other at its fixed address (elastic/replicas.py): /start."""
    first = sizing.slots(spec, len(world))[0]
    body = {
        "nnodes": len(world),
        "faultCount": job.fault_count,
        "master_addr": replicas.pod_name(job, first[0].name, first[1]),
        "master_port": replicas.MASTER_PORT,
        "progress": job.progress,
        "log_monitoring_configuration": list(spec.log_monitoring),
    }
    for rank, replica in enumerate(world):
        ElasticReplica.objects.filter(pk=replica.pk).update(rank=rank)
        try:
            _agent(replica, states[replica.container_name]).start({**body, "rank": rank})
        except AgentUnreachable as error:  # the ones already started are stopped with the fault
            return _on_fault(job, spec, [replica], f"{_pod(job, replica)} did not take /start: {error}")
    resized = job.world_size not in (0, len(world))
    condition = (status.RUNNING, "Resized" if resized else "Running", f"Running at {len(world)} replicas.")
    status.move(
        job, spec, JobPhase.RUNNING, condition,
        world_size=len(world), started_at=job.started_at or timezone.now(), avoided_gpus=[], avoided_nodes=[],
        short_since=None,
    )
    return _poll()


# --- Running -----------------------------------------------------------------------------------

def _running(job: HyperPodJob, spec: JobSpec) -> float | None:
    ranked = _ranked(job)
    _surface_checkpoint_failures(job, spec, ranked)
    states = _states(job)
    answers = {replica.pk: _answer(replica, states.get(replica.container_name)) for replica in ranked}
    faulty = [r for r in ranked if _is_faulty(states.get(r.container_name), answers[r.pk])]
    if faulty:
        return _on_fault(job, spec, faulty, _fault_reason(faulty, states, answers))
    if ranked and all(answer.get("status") == "completed" for answer in answers.values()):
        for replica in ranked:
            _quietly(_agent(replica, states[replica.container_name]).shutdown)
        condition = (status.SUCCEEDED, "Completed", "Every replica completed.")
        return _finish(job, spec, JobPhase.SUCCEEDED, condition)
    _agree_on_progress(job, spec, answers.values())
    if job.target_replicas != job.world_size:
        if job.target_replicas == 0:
            return _begin_stop(job, spec, StopReason.EVICT, "Evicted by a higher-priority job.")
        return _begin_stop(job, spec, StopReason.RESIZE, f"Scaling to {job.target_replicas} replicas.")
    larger = planner.growth_size(job, spec)
    if larger is not None:
        return _grow(job, spec, larger)
    paused = planner.growth_pause_left(job, spec)  # room freed meanwhile is taken when it ends
    return min(_poll(), paused) if paused > 0 else _poll()


def _grow(job: HyperPodJob, spec: JobSpec, larger: int) -> float:
    """A resize up, the seed's sequence (graceful /stop, every agent ready, /start of the larger
    world), with the new replicas' GPUs taken now and, on the owner's engine, their containers
    started while the world stops: their agents come up during the graceful stop, not after it.
    A world that comes to span nodes is left to Creating (its pods move to an overlay network),
    and so are the new replicas of other nodes (members.sync starts them)."""
    if not planner.allocate(job, spec, larger):
        return _poll()  # the GPUs went to someone else since growth_size looked
    message = f"Scaling up to {larger} replicas."
    delay = _begin_stop(job, spec, StopReason.RESIZE, message, target_replicas=larger)
    if job.overlay or not _spans_nodes(job):
        _start_new_replicas_here(job, spec, larger)
    return delay


def _start_new_replicas_here(job: HyperPodJob, spec: JobSpec, size: int) -> None:
    runtime = get_runtime()
    running = {state.name for state in runtime.find(replicas.job_labels(job))}
    new = [(group, replica) for group, replica in _world(job, spec, size)
           if replica.rank is None and _here(job, replica) and replica.container_name not in running]
    if not new:
        return
    subnet = replicas.ensure_network(runtime, job, spec)
    tier = tier_network.reach_for(runtime, job.node.name, isolated=False)
    for group, replica in new:
        replicas.start(runtime, job, spec, group, replica, subnet, tier)


def _begin_stop(
    job: HyperPodJob, spec: JobSpec, reason: str, message: str, graceful: bool = True, **fields
) -> float:
    states = _states(job)
    for replica in _ranked(job):
        state = states.get(replica.container_name)
        if state is not None and state.running:
            _quietly(lambda r=replica, s=state: _agent(r, s).stop(graceful, _stop_timeout(spec, reason)))
    status.move(
        job, spec, JobPhase.STOPPING, (status.RESTARTING, reason, message),
        stop_reason=reason, stop_sent_at=timezone.now(), **fields,
    )
    return _transition_poll(job)


def _on_fault(job: HyperPodJob, spec: JobSpec, faulty: list[ElasticReplica], reason: str) -> float | None:
    """Restart as runPolicy.restartPolicy says (elastic/restarts.py), or fail the job."""
    states = _states(job)
    in_place = all(r.container_name in states and r.node.lost_at is None for r in faulty)
    window = restarts.Window.load(job.restarts)
    nodes = [r.node.name for r in faulty]
    decision = restarts.decide(spec, window, job.fault_count, nodes, in_place, timezone.now())
    _record_faulty(job, faulty, decision)
    if isinstance(decision, restarts.GiveUp):
        failure = (status.FAILED, decision.reason, f"{reason} {decision.summary}")
        return _finish(job, spec, JobPhase.FAILED, failure)
    message = f"{decision.summary} {reason}"
    counts = {"fault_count": job.fault_count + 1, "restarts": decision.window.dump()}
    if decision.kind == restarts.PROCESS_LEVEL:  # every pod stays; an exited container starts again
        _remove_containers(job, [r for r in faulty if states[r.container_name].exited], fresh=False)
        return _begin_stop(job, spec, StopReason.FAULT, message, graceful=False, **counts)
    faulty_gpus = {f"{r.node.name}:{gpu.device_id}" for r in faulty for gpu in r.gpus.all()}
    avoided = sorted(set(job.avoided_gpus) | faulty_gpus)
    _remove_replicas(faulty)
    owner = _owner_after_fault(job, decision.avoided_nodes)
    if owner is None:
        return _move_off(job, spec, message, list(decision.avoided_nodes), avoided_gpus=avoided, **counts)
    _remove_containers(job, list(job.replicas.all()), fresh=True)  # every pod is created again
    return _begin_stop(job, spec, StopReason.FAULT, message, graceful=False, avoided_gpus=avoided, node=owner,
                       **counts)


def _owner_after_fault(job: HyperPodJob, avoided_nodes) -> Node | None:
    """Who owns the job after a full job restart: its owner, unless that is lost or a repeat
    offender to avoid; then the node of its first remaining replica on a live node (the world
    restarts there and on the job's other nodes); None when none is left: the whole job moves
    (`_move_off`). The owner is kept even with no replica left on it (the job's queue stays)."""
    if job.node is None or (job.node.name not in avoided_nodes and job.node.lost_at is None):
        return job.node
    if job.node.name in avoided_nodes:
        return None  # a repeat offender: the whole job leaves it, as on one node
    left = job.replicas.filter(node__lost_at__isnull=True).select_related("node").order_by("group", "index")
    survivor = next((r.node for r in left if r.node.name not in avoided_nodes), None)
    return survivor


def _record_faulty(job: HyperPodJob, faulty: list[ElasticReplica], decision) -> None:
    """status.latestFaultyPodInstanceList: the faulty pods, their ranks and nodes (HyperPod's
    instances), and the kind of restart they caused."""
    record = {
        "faultyPodList": [_pod(job, r) for r in faulty],
        "faultyRankList": [str(r.rank) for r in faulty if r.rank is not None],
        "faultyInstanceIdList": sorted({r.node.name for r in faulty}),
    }
    if isinstance(decision, restarts.Restart):
        record = {"restartType": decision.kind, **record}
    job.status = {**job.status, "latestFaultyPodInstanceList": record}


def _on_lost_nodes(job: HyperPodJob) -> list[ElasticReplica]:
    """The replicas of a job with a world (Creating, Running, Stopping) whose node was declared
    lost (capacity/nodes.declare_lost: no heartbeat)."""
    if job.phase not in planner.ACTIVE_PHASES:
        return []
    return list(job.replicas.filter(node__lost_at__isnull=False).select_related("node"))


def _on_node_lost(job: HyperPodJob, spec: JobSpec, lost: list[ElasticReplica]) -> float | None:
    """A fault of every replica on a lost node, as HyperPod counts a node failure: their pods are
    out of reach, so the restart is a full job restart (runPolicy permitting, or the job fails)
    and the job is placed again on live nodes, resuming from the progress its agents agreed on.
    This step runs on any live worker (elastic/tasks.py): the lost node's cannot."""
    nodes = sorted({replica.node.name for replica in lost})
    pods = ", ".join(_pod(job, replica) for replica in lost)
    reason = f"Node {', '.join(nodes)} was lost (no heartbeat) with {pods}."
    return _on_fault(job, spec, lost, reason)


def _move_off(job: HyperPodJob, spec: JobSpec, message: str, nodes: list[str], **fields) -> float:
    """A full job restart that leaves the job's node (a repeat offender, or a lost node): every
    replica goes and the job is placed again, like a new one, on another node."""
    _release(job, spec, keep=0)
    replicas.remove_network(get_runtime(), job)
    status.move(
        job, spec, JobPhase.PENDING, (status.RESTARTING, StopReason.FAULT, message),
        node=None, world_size=0, stop_reason=StopReason.NONE, avoided_nodes=nodes,
        restart_count=job.restart_count + 1, **_NO_NETWORK, **fields,
    )
    return _poll()


# --- Stopping ----------------------------------------------------------------------------------

def _stopping(job: HyperPodJob, spec: JobSpec) -> float | None:
    ranked = _ranked(job)
    _surface_checkpoint_failures(job, spec, ranked)
    states = _states(job)
    alive = [r for r in ranked if _still_stopping(r, states.get(r.container_name))]
    patience = _stop_timeout(spec, job.stop_reason) + FORCE_KILL_MARGIN_SECONDS
    deadline = job.stop_sent_at + timedelta(seconds=patience)
    if alive and timezone.now() < deadline:
        return _transition_poll(job)
    for replica in alive:  # past the deadline: force-killed, created again in Creating
        log.warning("hyperpod job %s: %s did not stop in time; removing it", job, replica.container_name)
    _remove_containers(job, alive, fresh=False)
    ElasticReplica.objects.filter(job=job).update(rank=None)
    if job.stop_reason == StopReason.EVICT or job.target_replicas == 0:
        _release(job, spec, keep=0)
        return _to_pending(job, spec)
    return _regroup(job, spec)


def _regroup(job: HyperPodJob, spec: JobSpec) -> float:
    """Every agent is ready: give the world its target size, or wait for spare capacity."""
    _release(job, spec, keep=job.target_replicas)
    if planner.allocate(job, spec, job.target_replicas):
        return _restart(job, spec, job.target_replicas)
    now = timezone.now()
    if job.short_since is None:
        status.refresh(job, spec, short_since=now)
    timeout = spec.elastic.faulty_scale_down_timeout if spec.elastic else None
    if timeout is not None and (now - job.short_since).total_seconds() >= timeout:
        for size in reversed([s for s in sizing.allowed_sizes(spec) if s < job.target_replicas]):
            _release(job, spec, keep=size)
            if planner.allocate(job, spec, size):
                return _restart(job, spec, size)
    status.say(job, spec, _waiting_for_capacity(job))
    return _poll()


def _waiting_for_capacity(job: HyperPodJob) -> str:
    """What a world short of replicas waits for. After a fault it names the faulty pods and their
    nodes: it replaces the message of the `Restarting` condition, which named them."""
    fault = job.status.get("latestFaultyPodInstanceList") or {}
    if job.stop_reason != StopReason.FAULT or not fault.get("faultyPodList"):
        return f"Waiting for capacity for {job.target_replicas} replicas."
    pods, nodes = ", ".join(fault["faultyPodList"]), ", ".join(fault.get("faultyInstanceIdList", []))
    return f"Waiting for capacity to replace {pods}, faulty on {nodes} ({job.target_replicas} wanted)."


def _restart(job: HyperPodJob, spec: JobSpec, size: int) -> float:
    resized = job.stop_reason == StopReason.RESIZE or size != job.target_replicas
    if _spans_nodes(job) and not job.overlay:
        _to_overlay(job)
    status.move(
        job, spec, JobPhase.CREATING, None,
        target_replicas=size, restart_count=job.restart_count + 1, stop_reason=StopReason.NONE,
        last_scaling_at=timezone.now() if resized else job.last_scaling_at,
    )
    return 0.0


def _to_overlay(job: HyperPodJob) -> None:
    """A world of a job on one node now spans nodes (growth, a replacement elsewhere): its pods
    are created again on an overlay network instead of the owner's bridge (their files kept)."""
    _remove_containers(job, list(job.replicas.filter(node=job.node)), fresh=False)
    replicas.remove_network(get_runtime(), job)
    HyperPodJob.objects.filter(pk=job.pk).update(overlay=True, network_subnet="")
    job.overlay, job.network_subnet = True, ""


def _to_pending(job: HyperPodJob, spec: JobSpec) -> float:
    replicas.remove_network(get_runtime(), job)
    status.move(
        job, spec, JobPhase.PENDING,
        (status.RESTARTING, "Evicted", "Waiting for capacity after an eviction."),
        node=None, world_size=0, stop_reason=StopReason.NONE, **_NO_NETWORK,
    )
    return _poll()


# --- Ending ------------------------------------------------------------------------------------

def _finish(job: HyperPodJob, spec: JobSpec, phase: str, condition: tuple[str, str, str]) -> float | None:
    """Free the job's GPUs and remove its containers but those cleanPodPolicy keeps, then end it."""
    every = list(job.replicas.all())
    kept = _kept_on_finish(job, spec, phase, every)
    _remove_replicas([replica for replica in every if replica not in kept])
    ElasticReplica.objects.filter(pk__in=[replica.pk for replica in kept]).delete()  # their GPUs
    if not kept:
        replicas.remove_network(get_runtime(), job)
        safe_files.remove_tree(replicas.job_directory(job))
    container_credentials.revoke(replicas.holder_arn(job))
    status.move(job, spec, phase, condition, completed_at=timezone.now(), world_size=0, node=None)
    return _finished(job, spec)


def _kept_on_finish(job: HyperPodJob, spec: JobSpec, phase: str, every: list) -> list[ElasticReplica]:
    """The replicas whose containers stay until the job is deleted (`replicas.kept_on_finish`);
    another node keeps its own the same way (elastic/members.py)."""
    states = _states(job)
    succeeded = phase == JobPhase.SUCCEEDED
    return [r for r in every if replicas.kept_on_finish(spec, succeeded, states.get(r.container_name))]


def _finished(job: HyperPodJob, spec: JobSpec) -> float | None:
    """A finished job waits out ttlSecondsAfterFinished, then is deleted; without one it stays."""
    if spec.ttl_seconds_after_finished is None:
        return None
    expires = job.completed_at + timedelta(seconds=spec.ttl_seconds_after_finished)
    left = (expires - timezone.now()).total_seconds()
    if left > 0:
        return left
    return _delete(job)


def _delete(job: HyperPodJob) -> None:
    runtime = get_runtime()
    for state in runtime.find(replicas.job_labels(job)):
        runtime.remove(state.name)
    replicas.remove_network(runtime, job)
    safe_files.remove_tree(replicas.job_directory(job))
    container_credentials.revoke(replicas.holder_arn(job))
    job.delete()  # the other nodes' containers: removed by their nodes (elastic/members.py)
    return None


def _give_up(job: HyperPodJob, reason: str) -> float | None:
    return _finish(job, planner.spec_of(job), JobPhase.FAILED, (status.FAILED, "InternalError", reason))


# --- Helpers -----------------------------------------------------------------------------------

def _world(job: HyperPodJob, spec: JobSpec, size: int) -> list[tuple]:
    rows = {(r.group, r.index): r for r in job.replicas.select_related("node")}
    return [(group, rows[(group.name, index)]) for group, index in sizing.slots(spec, size)]


def _ranked(job: HyperPodJob) -> list[ElasticReplica]:
    return list(job.replicas.filter(rank__isnull=False).select_related("node").order_by("rank"))


def _release(job: HyperPodJob, spec: JobSpec, keep: int) -> None:
    """Remove the replicas (containers, rows, hence GPUs) outside a world of `keep`."""
    wanted = {(group.name, index) for group, index in sizing.slots(spec, keep)}
    _remove_replicas([r for r in job.replicas.all() if (r.group, r.index) not in wanted])


def _remove_replicas(gone: list[ElasticReplica]) -> None:
    """Containers first, then the rows in one statement: their GPUs come back all at once, so a
    job growing meanwhile never sees half of them (and grows twice)."""
    if gone:
        _remove_containers(gone[0].job, gone, fresh=True)
    ElasticReplica.objects.filter(pk__in=[replica.pk for replica in gone]).delete()


def _remove_containers(job: HyperPodJob, gone: list[ElasticReplica], fresh: bool) -> None:
    """Remove replicas' containers, their last lines copied to their pods' log streams first;
    `fresh`: the pod's own files (emptyDir volumes, hosts) go too, as a new pod has none. Another
    node's are replaced by that node (`members.replace`: its next container, with fresh files)."""
    if gone:
        replica_logs.collect(job, get_runtime())
    for replica in gone:
        if not _here(job, replica):
            members.replace(job, replica)
            continue
        get_runtime().remove(replica.container_name)
        if fresh:
            safe_files.remove_tree(replicas.replica_directory(job, replica))


def _pod(job: HyperPodJob, replica: ElasticReplica) -> str:
    return replicas.pod_name(job, replica.group, replica.index)


def _states(job: HyperPodJob) -> dict[str, ContainerState]:
    """The job's containers: the owner's from its engine, the other nodes' as they reported them."""
    states = {state.name: state for state in get_runtime().find(replicas.job_labels(job))}
    for replica in job.replicas.exclude(node=job.node):
        reported = members.state_of(replica)
        if reported is not None:
            states[replica.container_name] = reported
    return states


def _here(job: HyperPodJob, replica: ElasticReplica) -> bool:
    """Whether the replica is on the job's owner, whose engine the step's worker drives."""
    return replica.node_id == job.node_id


def _spans_nodes(job: HyperPodJob) -> bool:
    return job.replicas.values("node").distinct().count() > 1


def _agent(replica: ElasticReplica, state: ContainerState) -> Agent:
    return Agent(replica.node.address, state.host_port)


def _answer(replica: ElasticReplica, state: ContainerState | None) -> dict:
    """The agent's /status, {} when its container is not running or it does not answer."""
    if state is None or not state.running or state.host_port is None:
        return {}
    try:
        return _agent(replica, state).status()
    except AgentUnreachable:
        return {}


def _status_of(replica: ElasticReplica, state: ContainerState | None) -> str | None:
    return _answer(replica, state).get("status")


def _still_stopping(replica: ElasticReplica, state: ContainerState | None) -> bool:
    """Its container runs and its agent has not said it is `ready` again. One that does not
    answer (a loaded machine) is waited for too, up to the stop's deadline: starting a new
    world while it may still be stopping would give it a /start it cannot take."""
    if state is None or not state.running:
        return False
    return _answer(replica, state).get("status") != "ready"


def _is_faulty(state: ContainerState | None, answer: dict) -> bool:
    return state is None or state.exited or answer.get("status") == "faulted"


def _fault_reason(faulty: list[ElasticReplica], states: dict, answers: dict) -> str:
    parts = []
    for replica in faulty:
        state, answer = states.get(replica.container_name), answers[replica.pk]
        if state is None:
            parts.append(f"{replica.container_name} vanished")
        elif state.exited:
            parts.append(f"{replica.container_name} exited ({_exit(state)})")
        else:
            said = f"{answer.get('reason', 'Fault')}: {answer.get('message', '')}".rstrip(": ")
            parts.append(f"{replica.container_name}: {said}")
    return "; ".join(parts)[:1024]


def _exit(state: ContainerState) -> str:
    return "out of memory" if state.oom_killed else f"exit code {state.exit_code}"


def _agree_on_progress(job: HyperPodJob, spec: JobSpec, answers) -> None:
    """The checkpoint every agent reported complete, per prefix: the one to resume from."""
    reported = [answer.get("progress") or {} for answer in answers]
    if not reported or not all(reported):
        return
    agreed = {}
    for prefix in set.intersection(*(set(progress) for progress in reported)):
        entries = [progress[prefix] for progress in reported]
        agreed[prefix] = min(entries, key=lambda entry: entry.get("progressCount", 0))
    if agreed and agreed != job.progress:
        status.refresh(job, spec, progress=agreed)


def _surface_checkpoint_failures(job: HyperPodJob, spec: JobSpec, world: list[ElasticReplica]) -> None:
    """A write the checkpointing library reported failed, in the job's status and the worker's log
    (elastic/checkpointing.py): looked at on every pass while the world runs or stops (it saves
    when told to stop), before the job can end."""
    for replica in (r for r in world if _here(job, r)):  # another node's files are on its disk
        failure = checkpointing.newest_write_error(replicas.checkpointing_log_directory(job, replica))
        if failure is None:
            continue
        message = f"{_pod(job, replica)}: {failure}"
        if status.report_checkpoint_failure(job, spec, message):
            log.warning("hyperpod job %s: a checkpoint write failed: %s", job, message)
        return


def _stop_timeout(spec: JobSpec, reason: str) -> int:
    if spec.elastic is None or reason == StopReason.FAULT:
        return NON_ELASTIC_STOP_SECONDS
    return spec.elastic.graceful_shutdown_timeout


def _quietly(call) -> None:
    """An agent that does not answer a command is judged by its /status at the next look."""
    try:
        call()
    except AgentUnreachable as error:
        log.info("agent did not take a command: %s", error)


_STEPS = {
    JobPhase.PENDING: _pending,
    JobPhase.CREATING: _creating,
    JobPhase.RUNNING: _running,
    JobPhase.STOPPING: _stopping,
    JobPhase.SUSPENDED: _suspended,
}
