"""Places training jobs on worker nodes: which node runs each instance, with which GPUs.

- GPUs are strict: each instance gets `gpus` device ids of its node for itself (a unique
  constraint on (node, device) makes a double booking impossible even between racing workers).
- CPUs and memory become container limits, the instance type's size capped at the node's, and
  are shared between jobs; with SAGEPORT_STRICT_CPU_MEMORY they are reserved like GPUs.
- All instances of a job go on one node when one can hold them all: the job's containers share
  a Docker bridge network, which exists on one engine only, and co-located instances talk
  fastest. With SAGEPORT_MULTI_NODE_NETWORK=overlay, a job that fits on no single node is spread
  over several (the fewest that hold it), its instances joined by a Swarm overlay network
  (training/spans.py); without it, such a job waits or never fits, as on one node.
- First come, first served: a job is placed only when no older job that could ever be placed is
  still waiting, so a big job is never starved by a stream of small ones.
- Only NVIDIA GPUs are scheduled; a type with other accelerators (Trainium, Inferentia, Gaudi)
  can never be placed.

`place(job)` answers `Placed`, `Waiting` (with what it waits for, shown as the StatusMessage of
the `Pending` secondary status) or `NeverFits` (the job fails at once)."""
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from capacity import fitting, instance_types, instances
from capacity.fitting import MIB, Demand, NodeCapacity, empty
from capacity.gpus import foreign_accelerator_reason
from capacity.models import GpuAllocation, Node, Placement
from training import workspace
from training.models import TERMINAL_STATUSES, SecondaryStatus, TrainingJob, TrainingJobStatus

# Secondary statuses of a job that waits for a placement (Restarting comes back to Starting).
WAITING_SECONDARY_STATUSES = (SecondaryStatus.STARTING, SecondaryStatus.PENDING, SecondaryStatus.RESTARTING)


@dataclass(frozen=True)
class Placed:
    node: str  # the node of algo-1, which runs the job's steps (training/spans.py)


@dataclass(frozen=True)
class Waiting:
    reason: str
    # Short of free capacity (rather than queued behind older jobs): GPUs may be asked back from
    # lower-priority work (training/priority.py).
    for_capacity: bool = False


@dataclass(frozen=True)
class NeverFits:
    reason: str


def demand_of(job: TrainingJob) -> Demand:
    resources = job.request["ResourceConfig"]
    return Demand(instance_types.lookup(resources["InstanceType"]), resources["InstanceCount"])


def place(job: TrainingJob) -> Placed | Waiting | NeverFits:
    existing = node_of(job.pk)
    if existing is not None:
        return Placed(existing)
    demand = demand_of(job)
    if demand.instance_type.accelerator not in (None, "nvidia"):
        return NeverFits(foreign_accelerator_reason(demand.instance_type))
    try:
        with transaction.atomic():
            # Locks the node rows (PostgreSQL) so schedulers take turns; SQLite's IMMEDIATE
            # transactions already serialise writers.
            nodes = list(Node.objects.select_for_update().order_by("name"))
            return _place_locked(job, demand, nodes)
    except IntegrityError:  # a racing scheduler took a device first: look again shortly
        return Waiting("Waiting for capacity: another job took the GPUs first.")


def _place_locked(job: TrainingJob, demand: Demand, nodes: list[Node]) -> Placed | Waiting | NeverFits:
    if not nodes:
        return Waiting("Waiting for a worker node to register its capacity.")
    if not _could_ever_hold_all(nodes, demand):
        return NeverFits(_never_fits_reason(demand, nodes))
    ahead = _older_jobs_waiting(job, demand, nodes)
    if ahead:
        return Waiting(
            f"Waiting for capacity: {ahead} older job{'s are' if ahead > 1 else ' is'} waiting first "
            "(first come, first served)."
        )
    capacities = fitting.capacities(fitting.live(nodes))
    shares = _on_one_node(capacities, demand)
    if not shares and settings.SAGEPORT_SPAN_NODES:
        shares = _spread(capacities, demand)
    if not shares:
        return Waiting(_waiting_reason(demand, nodes), for_capacity=True)
    _create_placements(job, demand, shares)
    return Placed(shares[0][0].node.name)


Shares = list[tuple["NodeCapacity", int]]  # (node, how many instances go there), algo-1's node first


def _on_one_node(capacities: list[NodeCapacity], demand: Demand) -> Shares:
    """The node that fits the whole job with the fewest free GPUs left (packing)."""
    candidates = [capacity for capacity in capacities if capacity.fits(demand)]
    if not candidates:
        return []
    best = min(candidates, key=lambda capacity: (len(capacity.free_gpus), capacity.node.name))
    return [(best, demand.count)]


def _spread(capacities: list[NodeCapacity], demand: Demand) -> Shares:
    """The fewest nodes that hold the job together: those holding the most instances first."""
    shares, left = [], demand.count
    for capacity in sorted(capacities, key=lambda c: (-c.instances_held(demand), c.node.name)):
        take = min(left, capacity.instances_held(demand))
        if take:
            shares.append((capacity, take))
            left -= take
        if not left:
            return shares
    return []


def _could_ever_hold_all(nodes: list[Node], demand: Demand) -> bool:
    """On empty nodes: one of them, or with SAGEPORT_MULTI_NODE_NETWORK=overlay all together.
    Lost nodes count: they are expected back (delete a node to retire it)."""
    if any(empty(node).fits(demand) for node in nodes):
        return True
    together = sum(empty(node).instances_held(demand) for node in nodes)
    return settings.SAGEPORT_SPAN_NODES and together >= demand.count


def _older_jobs_waiting(job: TrainingJob, demand: Demand, nodes: list[Node]) -> int:
    """Older jobs still waiting for what this one needs. Without GPUs (and with shared CPUs and
    memory) a job competes with nobody: it neither waits in line nor holds the line."""
    if not _competes(demand):
        return 0
    older = (
        TrainingJob.objects.filter(training_job_status=TrainingJobStatus.IN_PROGRESS)
        .filter(secondary_status__in=WAITING_SECONDARY_STATUSES)
        .filter(placements__isnull=True)
        .filter(Q(creation_time__lt=job.creation_time) | Q(creation_time=job.creation_time, pk__lt=job.pk))
        .only("request")
    )
    # One that can never fit will fail on its next look and must not hold the line meanwhile.
    return sum(1 for other in older if _holds_the_line(other, nodes))


def _competes(demand: Demand) -> bool:
    return demand.gpus > 0 or settings.SAGEPORT_STRICT_CPU_MEMORY


def _holds_the_line(job: TrainingJob, nodes: list[Node]) -> bool:
    try:
        demand = demand_of(job)
    except instance_types.UnknownInstanceType:
        return False
    return (
        _competes(demand)
        and demand.instance_type.accelerator in (None, "nvidia")
        and _could_ever_hold_all(nodes, demand)
    )


def _create_placements(job: TrainingJob, demand: Demand, shares: Shares) -> None:
    hosts = iter(workspace.host_names(demand.count))  # in order: algo-1 on the first share's node
    for capacity, count in shares:
        node = capacity.node
        limits = instance_types.container_limits(demand.instance_type, node.cpus, node.memory_bytes)
        nano_cpus, memory_bytes = limits
        free = iter(capacity.free_gpus)
        for _ in range(count):
            placement = Placement.objects.create(
                job=job, host=next(hosts), node=node, nano_cpus=nano_cpus, memory_bytes=memory_bytes
            )
            GpuAllocation.objects.bulk_create(
                GpuAllocation(placement=placement, node=node, device_id=next(free))
                for _ in range(demand.gpus)
            )


def _never_fits_reason(demand: Demand, nodes: list[Node]) -> str:
    largest = max(nodes, key=lambda node: (len(node.gpus), node.cpus, node.memory_bytes))
    wanted = f"{demand.gpus * demand.count} NVIDIA GPUs"
    if settings.SAGEPORT_STRICT_CPU_MEMORY:
        wanted += (
            f", {demand.instance_type.vcpus * demand.count} vCPUs and "
            f"{demand.instance_type.memory_mib * demand.count} MiB of memory"
        )
    return (
        f"ResourceLimitExceeded: {demand.describe()} needs {wanted} {_where()}, and no node has that "
        f"much (the largest, {largest.name}, has {len(largest.gpus)} GPUs, {largest.cpus} CPUs and "
        f"{largest.memory_bytes // MIB} MiB)."
    )


def _waiting_reason(demand: Demand, nodes: list[Node]) -> str:
    live = fitting.live(nodes)
    if not live:
        return "Waiting for capacity: no worker node is alive (their heartbeats stopped)."
    free = ", ".join(
        f"{c.node.name}: {len(c.free_gpus)} of {len(c.node.gpus)}" for c in fitting.capacities(live)
    )
    also = " with its vCPUs and memory" if settings.SAGEPORT_STRICT_CPU_MEMORY else ""
    return (
        f"Waiting for capacity: {demand.describe()} needs {demand.gpus * demand.count} NVIDIA GPUs "
        f"{_where()}{also}; free GPUs now: {free}."
    )


def _where() -> str:
    return "on one node or spread over several" if settings.SAGEPORT_SPAN_NODES else "on one node"


# --- What a placed job holds --------------------------------------------------------------


def node_of(job_id: int) -> str | None:
    """The node of the job's algo-1 (all its instances' node, unless it spans nodes): the one that
    runs the job's steps. None while the job is not placed."""
    placements = Placement.objects.filter(job_id=job_id).order_by("host")  # "algo-1" sorts first
    return placements.values_list("node__name", flat=True).first()


def placement_of(job: TrainingJob, host: str) -> Placement:
    return Placement.objects.select_related("node").prefetch_related("gpus").get(job=job, host=host)


def mark_started(job: TrainingJob, hosts: list[str]) -> None:
    instances.mark_started(Placement.objects.filter(job=job), hosts)


def started_hosts(job: TrainingJob) -> set[str]:
    return instances.started_hosts(Placement.objects.filter(job=job))


def release(job: TrainingJob) -> None:
    Placement.objects.filter(job=job).delete()  # its GPU allocations go with it


def release_finished() -> None:
    """Free what ended jobs still hold (a crash between the terminal status and the release)."""
    Placement.objects.filter(job__training_job_status__in=TERMINAL_STATUSES).delete()


def gpus_of_ended_jobs_pending(node_name: str) -> bool:
    """Whether ended jobs still hold GPUs of the node (freed by the job's clean-up or the
    sweeper); registered with capacity.gpus in TrainingConfig.ready."""
    held = GpuAllocation.objects.filter(node__name=node_name)
    return held.filter(placement__job__training_job_status__in=TERMINAL_STATUSES).exists()
