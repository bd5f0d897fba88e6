"""What a job's instances ask of the worker nodes and what each node still has free: the
arithmetic every container-job scheduler shares (training's, processing's), on the capacity
rows, whoever holds them.

- GPUs are strict: an instance gets `gpus` device ids of its node for itself.
- CPUs and memory become container limits and are shared between jobs; with
  SAGEPORT_STRICT_CPU_MEMORY they are reserved like GPUs.
- Only NVIDIA GPUs are scheduled; a type with other accelerators can never be placed."""
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from capacity import instance_types
from capacity import nodes as capacity_nodes
from capacity.gpus import free_gpus
from capacity.models import Node, Placement

NANO_CPUS_PER_CPU = 1_000_000_000
MIB = 1024 * 1024


@dataclass(frozen=True)
class Demand:
    """What one job asks for: `count` instances of `instance_type`, each with `gpus` GPUs."""

    instance_type: instance_types.InstanceType
    count: int

    @property
    def gpus(self) -> int:
        return self.instance_type.gpus if self.instance_type.accelerator == "nvidia" else 0

    @property
    def nano_cpus(self) -> int:
        return self.instance_type.vcpus * NANO_CPUS_PER_CPU

    @property
    def memory_bytes(self) -> int:
        return self.instance_type.memory_mib * MIB

    def describe(self) -> str:
        return f"{self.instance_type.name} x {self.count}"


@dataclass
class NodeCapacity:
    """A node and what is still free on it."""

    node: Node
    free_gpus: list[str]
    free_nano_cpus: int
    free_memory_bytes: int

    def fits(self, demand: Demand) -> bool:
        return self.instances_held(demand) >= demand.count

    def instances_held(self, demand: Demand) -> int:
        """How many of the job's instances this node can hold (`demand.count` at most)."""
        held = demand.count
        if demand.gpus:
            held = min(held, len(self.free_gpus) // demand.gpus)
        if settings.SAGEPORT_STRICT_CPU_MEMORY:
            by_cpus = self.free_nano_cpus // demand.nano_cpus
            held = min(held, by_cpus, self.free_memory_bytes // demand.memory_bytes)
        return max(held, 0)


def empty(node: Node) -> NodeCapacity:
    """The node as if nothing ran on it: whether a demand could ever fit there."""
    return NodeCapacity(node, node.gpu_ids, node.cpus * NANO_CPUS_PER_CPU, node.memory_bytes)


def live(nodes: list[Node]) -> list[Node]:
    now = timezone.now()
    return [node for node in nodes if capacity_nodes.is_live(node, now)]


def capacities(nodes: list[Node]) -> list[NodeCapacity]:
    """What is free on each node, after every placement of every kind of job and every GPU held."""
    found = []
    for node in nodes:
        placements = Placement.objects.filter(node=node)
        used_cpus = sum(placements.values_list("nano_cpus", flat=True))
        used_memory = sum(placements.values_list("memory_bytes", flat=True))
        found.append(NodeCapacity(
            node=node,
            free_gpus=free_gpus(node),
            free_nano_cpus=node.cpus * NANO_CPUS_PER_CPU - used_cpus,
            free_memory_bytes=node.memory_bytes - used_memory,
        ))
    return found
