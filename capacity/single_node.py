"""Places a job whose instances all run on one node (processing and transform jobs: their
instances share a Docker bridge network or the worker that drives them, which exist on one engine
only; training's overlay networks across nodes are training's): which node, with which GPUs and
container limits (the arithmetic shared with training: capacity/fitting.py).

The job is named by `owner`, the keyword that picks its `Placement` rows (`{"processing_job":
job}`, `{"transform_job": job}`), so this module imports no feature. A job whose instances fit
no node even when empty fails at once (`NeverFits`, in SageMaker's `ResourceLimitExceeded`
words); one that would fit later waits (`Waiting`, looked at again at every poll), as a training
job waits in Pending."""
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from capacity import fitting, instance_types
from capacity.gpus import foreign_accelerator_reason
from capacity.models import GpuAllocation, Node, Placement


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


def place(owner: dict, demand: fitting.Demand, hosts: list[str]) -> Decision:
    """Every one of `hosts` on one node with `demand`'s GPUs each, all or nothing; a job placed
    already keeps its node."""
    existing = node_of(owner)
    if existing is not None:
        return Placed(existing)
    if demand.instance_type.accelerator not in (None, "nvidia"):
        return NeverFits(foreign_accelerator_reason(demand.instance_type))
    try:
        with transaction.atomic():
            nodes = list(Node.objects.select_for_update().order_by("name"))  # schedulers take turns
            return _place_locked(owner, demand, hosts, nodes)
    except IntegrityError:  # a racing scheduler took a device first: look again shortly
        return Waiting("Waiting for capacity: another job took the GPUs first.")


def _place_locked(owner: dict, demand: fitting.Demand, hosts: list[str], nodes: list[Node]) -> Decision:
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
    _create_placements(owner, demand, hosts, best)
    return Placed(best.node.name)


def _create_placements(
    owner: dict, demand: fitting.Demand, hosts: list[str], capacity: fitting.NodeCapacity
) -> None:
    node = capacity.node
    limits = instance_types.container_limits(demand.instance_type, node.cpus, node.memory_bytes)
    nano_cpus, memory_bytes = limits
    free = iter(capacity.free_gpus)
    for host in hosts:
        placement = Placement.objects.create(
            **owner, host=host, node=node, nano_cpus=nano_cpus, memory_bytes=memory_bytes
        )
        GpuAllocation.objects.bulk_create(
            GpuAllocation(placement=placement, node=node, device_id=next(free)) for _ in range(demand.gpus)
        )


def node_of(owner: dict) -> str | None:
    """The node of the job's instances; None while the job is not placed."""
    return Placement.objects.filter(**owner).values_list("node__name", flat=True).first()


def placement_of(owner: dict, host: str) -> Placement:
    return Placement.objects.select_related("node").prefetch_related("gpus").get(**owner, host=host)


def release(owner: dict) -> None:
    Placement.objects.filter(**owner).delete()  # its GPU allocations go with it
