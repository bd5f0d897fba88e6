"""Places processing jobs on worker nodes: which node runs the job's instances, with which GPUs
and container limits (the arithmetic shared with training: capacity/fitting.py).

All instances of a processing job go on one node: they share the job's Docker bridge network,
which exists on one engine only (training's overlay networks across nodes are training's).
A job whose instances fit no node even when empty fails at once (`NeverFits`); one that would fit
later waits (`Waiting`, the job stays Pending and is looked at again at every poll)."""
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from capacity import fitting, instance_types, instances
from capacity.gpus import foreign_accelerator_reason
from capacity.models import GpuAllocation, Node, Placement
from jobs.workspace import host_names
from processing.models import TERMINAL_STATUSES, ProcessingJob


@dataclass(frozen=True)
class Placed:
    node: str


@dataclass(frozen=True)
class Waiting:
    reason: str


@dataclass(frozen=True)
class NeverFits:
    reason: str


Decision = Placed | Waiting | NeverFits


def demand_of(job: ProcessingJob) -> fitting.Demand:
    cluster = job.request["ProcessingResources"]["ClusterConfig"]
    return fitting.Demand(instance_types.lookup(cluster["InstanceType"]), cluster["InstanceCount"])


def place(job: ProcessingJob) -> Decision:
    existing = node_of(job.pk)
    if existing is not None:
        return Placed(existing)
    demand = demand_of(job)
    if demand.instance_type.accelerator not in (None, "nvidia"):
        return NeverFits(foreign_accelerator_reason(demand.instance_type))
    try:
        with transaction.atomic():
            nodes = list(Node.objects.select_for_update().order_by("name"))  # schedulers take turns
            return _place_locked(job, demand, nodes)
    except IntegrityError:  # a racing scheduler took a device first: look again shortly
        return Waiting("Waiting for capacity: another job took the GPUs first.")


def _place_locked(job: ProcessingJob, demand: fitting.Demand, nodes: list[Node]) -> Decision:
    if not nodes:
        return Waiting("Waiting for a worker node to register its capacity.")
    if not any(fitting.empty(node).fits(demand) for node in nodes):
        return NeverFits(
            f"ResourceLimitExceeded: {demand.describe()} needs {demand.gpus * demand.count} NVIDIA GPUs "
            "on one node, and no node has that many."
        )
    candidates = [found for found in fitting.capacities(fitting.live(nodes)) if found.fits(demand)]
    if not candidates:
        return Waiting(f"Waiting for capacity: {demand.describe()} does not fit on any node now.")
    best = min(candidates, key=lambda found: (len(found.free_gpus), found.node.name))  # packing
    _create_placements(job, demand, best)
    return Placed(best.node.name)


def _create_placements(job: ProcessingJob, demand: fitting.Demand, capacity: fitting.NodeCapacity) -> None:
    node = capacity.node
    limits = instance_types.container_limits(demand.instance_type, node.cpus, node.memory_bytes)
    nano_cpus, memory_bytes = limits
    free = iter(capacity.free_gpus)
    for host in host_names(demand.count):
        placement = Placement.objects.create(
            processing_job=job, host=host, node=node, nano_cpus=nano_cpus, memory_bytes=memory_bytes
        )
        GpuAllocation.objects.bulk_create(
            GpuAllocation(placement=placement, node=node, device_id=next(free)) for _ in range(demand.gpus)
        )


def node_of(job_id: int) -> str | None:
    """The node of the job's instances; None while the job is not placed."""
    return Placement.objects.filter(processing_job_id=job_id).values_list("node__name", flat=True).first()


def placement_of(job: ProcessingJob, host: str) -> Placement:
    placements = Placement.objects.select_related("node").prefetch_related("gpus")
    return placements.get(processing_job=job, host=host)


def release(job: ProcessingJob) -> None:
    Placement.objects.filter(processing_job=job).delete()  # its GPU allocations go with it


def release_finished() -> None:
    """Free what ended jobs still hold (a crash between the terminal status and the release)."""
    Placement.objects.filter(processing_job__processing_job_status__in=TERMINAL_STATUSES).delete()


def gpus_of_ended_jobs_pending(node_name: str) -> bool:
    """Whether ended processing jobs still hold GPUs of the node (registered with capacity.gpus)."""
    held = GpuAllocation.objects.filter(node__name=node_name)
    return held.filter(placement__processing_job__processing_job_status__in=TERMINAL_STATUSES).exists()


def mark_started(job: ProcessingJob, hosts: list[str]) -> None:
    instances.mark_started(Placement.objects.filter(processing_job=job), hosts)


def started_hosts(job: ProcessingJob) -> set[str]:
    return instances.started_hosts(Placement.objects.filter(processing_job=job))


def placed_at(job: ProcessingJob):
    """When the job got its capacity (None while it has none)."""
    placements = Placement.objects.filter(processing_job=job).order_by("placed_at")
    return placements.values_list("placed_at", flat=True).first()
