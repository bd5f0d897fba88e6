"""Where and at what size HyperPodPyTorchJobs run: the operator's capacity decisions.

GPUs are the scarce resource (exclusive, `capacity.GpuAllocation` rows); each replica's GPUs are
on one node. The rules:
- Queue: a pending job starts only when no pending job ahead of it (a higher weight, or the same
  weight and older) is still waiting; it starts at the largest allowed size, up to the size it
  asks for, that the live nodes' free GPUs hold, and at once at its minimum if only that fits.
- Placement: a world goes on one node when one holds it (the node with the most free GPUs: a
  bridge network of its engine joins the replicas); otherwise, with
  SAGEPORT_MULTI_NODE_NETWORK=overlay, its replicas are spread in rank order over the nodes with
  the most free GPUs (the fewest nodes, first fit), joined by a Swarm overlay network. Replicas
  added later (growth, a replacement) go first on the job's owner, then on its other nodes, then
  on the other live nodes, roomiest first. The owner (`HyperPodJob.node`, whose queue runs the
  job's steps) is rank 0's node.
- Growth: a running elastic job grows to the largest allowed size the free GPUs allow (of its
  node, or of every live node when worlds may span nodes), at most once per
  `scalingTimeoutInSeconds` (or `runPolicy.restartPolicy.scaleUpSnoozeTimeInSeconds`, when
  longer) after its last resize, and never while a pending job (a HyperPodPyTorchJob, or a
  training job waiting for GPUs) of the same or a higher weight waits: waiting work gets freed capacity first.
- Preemption: a pending job that does not fit takes capacity back from lower-weight jobs on the
  node where that frees the most, lowest weight first, newest first: an elastic job shrinks to
  the largest allowed size that frees enough (only replicas of a lower weight than the
  requester's are ever dropped); only when shrinking is not enough is a job all of whose
  replicas weigh less evicted (back to pending, to start again when capacity allows). Training
  jobs with a priority tag ask the same way (capacity/preemption.py, training/priority.py).
- Never fits: a job whose smallest world the registered nodes' GPUs cannot hold (on one node, or
  spread over all of them when worlds may span nodes) fails.
- Repeat offenders: a job a full job restart moved off its node (elastic/restarts.py) is placed,
  and takes capacity back, only on other nodes, until its world has started again."""
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from capacity import nodes as capacity_nodes
from capacity import preemption
from capacity.gpus import free_gpus
from capacity.models import GpuAllocation, Node
from elastic import priorities, replicas, sizing
from elastic.models import ElasticReplica, HyperPodJob, JobPhase, StopReason
from elastic.spec import JobSpec, parse

ACTIVE_PHASES = (JobPhase.CREATING, JobPhase.RUNNING, JobPhase.STOPPING)

# Told the id of each job whose target a preemption cut, so that it starts giving the GPUs back
# now rather than at its next look (elastic/tasks.py registers its nudge: the tasks import this).
_cut_listeners: list[Callable[[int], None]] = []


@dataclass(frozen=True)
class Start:
    node: Node
    size: int


@dataclass(frozen=True)
class Wait:
    reason: str
    for_capacity: bool = False  # short of GPUs (rather than queued): lower weights may be preempted


@dataclass(frozen=True)
class NeverFits:
    reason: str


def on_target_cut(listener: Callable[[int], None]) -> None:
    if listener not in _cut_listeners:
        _cut_listeners.append(listener)


def spec_of(job: HyperPodJob) -> JobSpec:
    return parse(job.manifest)


def plan_start(job: HyperPodJob, spec: JobSpec) -> Start | Wait | NeverFits:
    smallest = sizing.allowed_sizes(spec)[0]
    needed = sizing.gpus_for(spec, smallest)
    registered = list(Node.objects.all())
    whole = [(node, len(node.gpu_ids)) for node in registered]
    if registered and placement(_demands(spec, 0, smallest), whole, settings.SAGEPORT_SPAN_NODES) is None:
        return NeverFits(
            f"ResourceLimitExceeded: the smallest world ({smallest} replicas) needs {needed} GPUs; "
            f"no node has that many{' (spread over every node)' if settings.SAGEPORT_SPAN_NODES else ''}."
        )
    ahead = first_waiting_ahead(job, spec)
    if ahead is not None:
        return Wait(f"Waiting for {ahead.namespace}/{ahead.name}, ahead in the queue.")
    live = _live_nodes(job.avoided_nodes)
    if not live and job.avoided_nodes:
        return Wait(f"Waiting for a node other than the repeat offenders {', '.join(job.avoided_nodes)}.")
    if not live:
        return Wait("Waiting for a worker node.")
    free = _roomiest_first([(node, len(usable_gpus(job, node))) for node in live])
    fitting = [size for size in sizing.allowed_sizes(spec) if size <= sizing.initial_size(spec)]
    for size in reversed(fitting):
        placed = _new_world(_demands(spec, 0, size), free)
        if placed is not None:
            return Start(placed[0], size)
    node, most = free[0]
    return Wait(f"Waiting for {needed} GPUs ({most} free on {node.name}).", for_capacity=True)


def placement(demands: list[int], free: list[tuple[Node, int]], span: bool) -> list[Node] | None:
    """Each replica's node, for replicas needing `demands` GPUs (rank order) on nodes with `free`
    GPUs, in the order the nodes are to be used: all on the first node that holds them all; or,
    when `span`, each on the first node that still has room for it (first fit). None when they
    do not fit. Pure: unit-tested with declared inventories."""
    whole = next((node for node, count in free if count >= sum(demands)), None)
    if whole is not None:
        return [whole] * len(demands)
    return _placed(demands, free) if span else None


def _new_world(demands: list[int], free: list[tuple[Node, int]]) -> list[Node] | None:
    """A new world on the roomiest node that holds it, else spread (when allowed)."""
    return placement(demands, free, settings.SAGEPORT_SPAN_NODES)


def _placed(demands: list[int], free: list[tuple[Node, int]]) -> list[Node] | None:
    left = [[node, count] for node, count in free]
    chosen = []
    for gpus in demands:
        entry = next((entry for entry in left if entry[1] >= gpus), None)
        if entry is None:
            return None
        entry[1] -= gpus
        chosen.append(entry[0])
    return chosen


def _demands(spec: JobSpec, size: int, larger: int) -> list[int]:
    """The GPUs of each replica a world of `size` lacks to be one of `larger`, in rank order."""
    return [group.gpus for group, _ in sizing.slots(spec, larger)[size:]]


def _roomiest_first(free: list[tuple[Node, int]]) -> list[tuple[Node, int]]:
    return sorted(free, key=lambda entry: (-entry[1], entry[0].name))


def growth_size(job: HyperPodJob, spec: JobSpec) -> int | None:
    """The larger size a running elastic job may grow to now, or None."""
    if spec.elastic is None or job.node is None or growth_pause_left(job, spec) > 0:
        return None
    weight = priorities.job_weight(job, spec)
    waiting = [priorities.job_weight(other, spec_of(other)) for other in _pending_others(job)]
    if any(other >= weight for other in waiting + preemption.waiting_weights()):
        return None
    current = job.target_replicas
    free = _free_for(job)
    larger = [s for s in sizing.allowed_sizes(spec)
              if s > current and _placed(_demands(spec, current, s), free) is not None]
    return larger[-1] if larger else None


def growth_pause_left(job: HyperPodJob, spec: JobSpec) -> float:
    """Seconds until a running elastic job may grow again: `scalingTimeoutInSeconds` (or the
    restart policy's `scaleUpSnoozeTimeInSeconds`, when longer) since its last resize or start."""
    since = job.last_scaling_at or job.started_at
    if spec.elastic is None or since is None:
        return 0.0
    pause = max(spec.elastic.scaling_timeout, spec.scale_up_snooze_seconds)
    return max(0.0, pause - (timezone.now() - since).total_seconds())


def usable_gpus(job: HyperPodJob, node: Node) -> list[str]:
    """The node's free GPUs, less those the job avoids after a fault."""
    return [device for device in free_gpus(node) if f"{node.name}:{device}" not in job.avoided_gpus]


def first_waiting_ahead(job: HyperPodJob, spec: JobSpec) -> HyperPodJob | None:
    weight = priorities.job_weight(job, spec)
    for other in _pending_others(job):
        other_weight = priorities.job_weight(other, spec_of(other))
        if other_weight > weight or (other_weight == weight and other.created_at < job.created_at):
            return other
    return None


def reclaim_for(job: HyperPodJob, spec: JobSpec) -> str | None:
    """Ask lower-weight jobs to give back what `job`'s smallest world lacks; a status message
    for the waiting job, or None when nothing can be taken back."""
    needed = sizing.gpus_for(spec, sizing.allowed_sizes(spec)[0])
    return _reclaim(needed, priorities.job_weight(job, spec), lambda node: usable_gpus(job, node), job)


def reclaim_for_others(request: preemption.GpuRequest) -> str | None:
    """The same for another feature's waiting work (a training job with a priority tag)."""
    return _reclaim(request.gpus, request.weight, free_gpus, None)


def _reclaim(needed: int, weight: int, free_on, requester: HyperPodJob | None) -> str | None:
    for node in _live_nodes(requester.avoided_nodes if requester else ()):
        coming = sum(_gpus_coming_back(other) for other in _active_on(node))
        shortfall = needed - len(free_on(node)) - coming
        if shortfall <= 0:
            return f"Waiting for lower-priority jobs on {node.name} to scale down."
        victims = _victims(node, weight, requester)
        if sum(freed for _, _, freed in victims) >= shortfall:
            _shrink_or_evict(victims, shortfall)
            return f"Preempting lower-priority jobs on {node.name}: {shortfall} GPUs to free."
    return None


def allocate(job: HyperPodJob, spec: JobSpec, size: int) -> bool:
    """Create the replica rows of a world of `size` that the job lacks, each with its GPUs of the
    node placement gives it (the job's own nodes first). False when they do not fit, or the GPUs
    went to someone else meanwhile (nothing is then created)."""
    existing = {(r.group, r.index) for r in job.replicas.all()}
    missing = [(g, index) for g, index in sizing.slots(spec, size) if (g.name, index) not in existing]
    free = _free_for(job)
    placed = _placed([group.gpus for group, _ in missing], free)
    if placed is None:
        return False
    devices = {node.pk: usable_gpus(job, node) for node, _ in free}
    try:
        with transaction.atomic():
            for (group, index), node in zip(missing, placed, strict=True):
                replica = ElasticReplica.objects.create(
                    job=job, group=group.name, index=index, node=node, created_at=timezone.now(),
                    container_name=replicas.container_name(job, group.name, index),
                )
                taken, devices[node.pk] = devices[node.pk][: group.gpus], devices[node.pk][group.gpus :]
                GpuAllocation.objects.bulk_create(
                    GpuAllocation(replica=replica, node=node, device_id=device) for device in taken
                )
    except IntegrityError:  # a racing scheduler booked one of those GPUs first
        return False
    return True


def _free_for(job: HyperPodJob) -> list[tuple[Node, int]]:
    """The nodes replicas added to the job may go on, in the order to use them, with their usable
    GPUs: its owner, its other nodes, then the other live nodes, roomiest first; only its owner
    when worlds may not span nodes."""
    owner = job.node
    if not settings.SAGEPORT_SPAN_NODES:
        return [(owner, len(usable_gpus(job, owner)))] if owner is not None else []
    live = [node for node in _live_nodes(job.avoided_nodes) if node != owner]
    used = set(job.replicas.values_list("node_id", flat=True))
    mine = [(node, len(usable_gpus(job, node))) for node in live if node.pk in used]
    others = _roomiest_first([(node, len(usable_gpus(job, node))) for node in live if node.pk not in used])
    first = [(owner, len(usable_gpus(job, owner)))] if owner is not None and owner.lost_at is None else []
    return first + sorted(mine, key=lambda entry: entry[0].name) + others


def _live_nodes(avoided=()) -> list[Node]:
    """The registered nodes that are alive, less those a job avoids (repeat offenders)."""
    live = set(capacity_nodes.live_names()) - set(avoided)
    return [node for node in Node.objects.order_by("name") if node.name in live]


def _pending_others(job: HyperPodJob):
    return (
        HyperPodJob.objects.filter(phase=JobPhase.PENDING, deletion_requested_at__isnull=True)
        .exclude(pk=job.pk)
        .order_by("created_at", "pk")
    )


def _active_on(node: Node):
    return HyperPodJob.objects.filter(node=node, phase__in=ACTIVE_PHASES, deletion_requested_at__isnull=True)


def _gpus_coming_back(job: HyperPodJob) -> int:
    """GPUs a job told to shrink still holds beyond its new target."""
    held = GpuAllocation.objects.filter(replica__job=job).count()
    return max(0, held - sizing.gpus_for(spec_of(job), job.target_replicas))


def _victims(node: Node, weight: int, requester: HyperPodJob | None) -> list[tuple[HyperPodJob, int, int]]:
    """(job, new size, GPUs freed) for each job on the node that lower weights can take from,
    lowest weight first, newest first; new size 0 means eviction."""
    found = []
    others = _active_on(node).exclude(pk=requester.pk) if requester else _active_on(node)
    for other in others.order_by("-created_at"):
        other_spec = spec_of(other)
        size = _smallest_lower_size(other, other_spec, weight)
        if size is None:
            continue
        freed = sizing.gpus_for(other_spec, other.target_replicas) - sizing.gpus_for(other_spec, size)
        if freed > 0:
            found.append((priorities.job_weight(other, other_spec), other, size, freed))
    found.sort(key=lambda entry: entry[0])
    return [(other, size, freed) for _, other, size, freed in found]


def _smallest_lower_size(job: HyperPodJob, spec: JobSpec, weight: int) -> int | None:
    """The smallest size the job can be cut to by dropping only replicas weighing less than
    `weight`: an allowed size, or 0 (eviction) when every replica weighs less."""
    current = job.target_replicas
    sizes = [size for size in sizing.allowed_sizes(spec) if size < current] + [0]
    lower = [s for s in sizes if _all_weigh_less(job, spec, sizing.dropped(spec, current, s), weight)]
    return min(lower) if lower else None


def _all_weigh_less(job: HyperPodJob, spec: JobSpec, dropped: list, weight: int) -> bool:
    return all(priorities.replica_weight(job, spec, group) < weight for group, _ in dropped)


def _shrink_or_evict(victims: list[tuple[HyperPodJob, int, int]], shortfall: int) -> None:
    """Cut each victim just enough, in order, until the shortfall is covered: shrinking to an
    allowed size first; eviction only for what shrinking cannot free."""
    for victim, smallest, _ in victims:
        if shortfall <= 0:
            return
        spec = spec_of(victim)
        size = _gentlest_cut(victim, spec, smallest, shortfall)
        freed = sizing.gpus_for(spec, victim.target_replicas) - sizing.gpus_for(spec, size)
        reason = StopReason.EVICT if size == 0 else StopReason.RESIZE
        cut = HyperPodJob.objects.filter(pk=victim.pk, target_replicas=victim.target_replicas).update(
            target_replicas=size, stop_reason=reason, next_check_at=timezone.now()
        )
        if cut:
            for listener in _cut_listeners:
                listener(victim.pk)
        shortfall -= freed


def _gentlest_cut(job: HyperPodJob, spec: JobSpec, smallest: int, shortfall: int) -> int:
    """The largest size between `smallest` and the job's target that frees `shortfall` GPUs;
    `smallest` when none frees enough."""
    current = job.target_replicas
    candidates = [s for s in sizing.allowed_sizes(spec) if smallest <= s < current]
    if smallest == 0:
        candidates = [0, *candidates]
    enough = [s for s in candidates if sizing.gpus_for(spec, current) - sizing.gpus_for(spec, s) >= shortfall]
    return max(enough) if enough else smallest
