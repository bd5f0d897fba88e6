"""Where an inference component's copies go: onto the instances of its endpoint's variant.

An instance of an inference-component endpoint runs no container of its own: it is a share of
capacity, its instance type's vCPUs, memory and accelerators (capacity/instance_types.py), that
the copies placed on it divide. A copy reserves its ComputeResourceRequirements there
(NumberOfCpuCoresRequired, MinMemoryRequiredInMb, NumberOfAcceleratorDevicesRequired); a copy
fits an instance whose unreserved share covers all three. New copies are spread: each goes to
the fitting instance with the fewest copies of its component, then the most free accelerators,
then the most free memory, then the first. The copies of an instance run on one node (the node
of its first copy), and a copy's accelerators are NVIDIA GPUs of that node held through
`GpuAllocation`, like any serving container's (hosting/placement.py).

All of a request's copies are placed or none: CapacityUnavailable says what was asked and what
is free, and the endpoint reconciler treats it as for any fleet (a new component fails, a copy
count change is not applied)."""

from dataclasses import dataclass

from django.db import IntegrityError, transaction

from capacity import gpus as capacity_gpus
from capacity import instance_types
from capacity import nodes as capacity_nodes
from capacity.models import GpuAllocation, Node
from hosting import containers as hosting_containers
from hosting.models import ComponentCopy, EndpointDeployment, ServingContainer
from hosting.placement import LIVE_STATUSES, CapacityUnavailable


@dataclass(frozen=True)
class Demand:
    """What one copy reserves on its instance."""

    cpus: float
    memory_mb: int
    accelerators: int

    @classmethod
    def of(cls, requirements: dict) -> "Demand":
        return cls(
            cpus=float(requirements.get("NumberOfCpuCoresRequired", 0)),
            memory_mb=int(requirements["MinMemoryRequiredInMb"]),
            accelerators=int(requirements.get("NumberOfAcceleratorDevicesRequired", 0)),
        )


@dataclass
class Instance:
    """One instance of the variant: its size, and what the copies on it reserve."""

    index: int
    cpus: float
    memory_mb: int
    accelerators: int
    used: Demand = Demand(0.0, 0, 0)
    own_copies: int = 0  # copies of the component being placed

    def free(self) -> Demand:
        return Demand(
            self.cpus - self.used.cpus,
            self.memory_mb - self.used.memory_mb,
            self.accelerators - self.used.accelerators,
        )

    def fits(self, demand: Demand) -> bool:
        free = self.free()
        return (
            demand.cpus <= free.cpus
            and demand.memory_mb <= free.memory_mb
            and demand.accelerators <= free.accelerators
        )

    def reserve(self, demand: Demand, own: bool = True) -> None:
        """Reserve a copy's share; `own`: a live copy of the component being placed."""
        self.used = Demand(
            self.used.cpus + demand.cpus,
            self.used.memory_mb + demand.memory_mb,
            self.used.accelerators + demand.accelerators,
        )
        self.own_copies += int(own)


def instances_of(instance_type: str, count: int) -> list[Instance]:
    spec = instance_types.lookup(instance_type)
    return [Instance(index, spec.vcpus, spec.memory_mib, spec.gpus) for index in range(count)]


def larger_than_an_instance(demand: Demand, instance_type: str) -> list[str]:
    """What a copy asks beyond the whole of one instance (it could never be placed)."""
    spec = instance_types.lookup(instance_type)
    asked = (
        ("NumberOfCpuCoresRequired", demand.cpus, spec.vcpus, "vCPUs"),
        ("MinMemoryRequiredInMb", demand.memory_mb, spec.memory_mib, "MiB of memory"),
        ("NumberOfAcceleratorDevicesRequired", demand.accelerators, spec.gpus, "accelerator devices"),
    )
    return [
        f"{member} {value:g} is more than an {instance_type} instance has ({size:g} {unit})."
        for member, value, size, unit in asked
        if value > size
    ]


def choose(instances: list[Instance], demand: Demand, count: int) -> list[int] | None:
    """The instance of each of `count` new copies (reserving them on `instances`), or None when
    they do not all fit."""
    chosen = []
    for _ in range(count):
        fitting = [instance for instance in instances if instance.fits(demand)]
        if not fitting:
            return None
        best = min(
            fitting,
            key=lambda i: (i.own_copies, -i.free().accelerators, -i.free().memory_mb, i.index),
        )
        best.reserve(demand)
        chosen.append(best.index)
    return chosen


def shortage(component: str, demand: Demand, count: int, instances: list[Instance]) -> str:
    free = "; ".join(
        f"instance {i.index + 1}: {i.free().cpus:g} vCPUs, {i.free().memory_mb} MiB, "
        f"{i.free().accelerators} accelerators"
        for i in instances
    )
    return (
        f"ResourceLimitExceeded: inference component {component} needs {count} more "
        f"cop{'ies' if count > 1 else 'y'} of {demand.cpus:g} vCPUs, {demand.memory_mb} MiB and "
        f"{demand.accelerators} accelerators each, and the endpoint's instances do not have them "
        f"unreserved ({free})."
    )


# --- Rows ------------------------------------------------------------------------------------


def add_copies(deployment: EndpointDeployment, variant_name: str, ordinals: range) -> bool:
    """Rows for new copies of a component's runner deployment, each on an instance of the parent
    endpoint's variant and a node, with its GPUs: all of them or none. False when a racing
    scheduler took a device first (look again); CapacityUnavailable when they do not fit."""
    component = deployment.endpoint.runs_component
    variant = hosting_containers.variant_spec(deployment, variant_name)
    demand = Demand.of(variant["ComputeResourceRequirements"])
    try:
        with transaction.atomic():
            nodes = Node.objects.select_for_update().order_by("name")
            live = [node for node in nodes if capacity_nodes.is_live(node)]
            instances = _instances_now(component)
            indexes = choose(instances, demand, len(ordinals))
            if indexes is None:
                raise CapacityUnavailable(
                    shortage(component.inference_component_name, demand, len(ordinals), instances)
                )
            for ordinal, index in zip(ordinals, indexes, strict=True):
                _create_copy(deployment, variant_name, ordinal, index, demand, component, live)
    except IntegrityError:
        return False
    return True


def _instances_now(component) -> list[Instance]:
    """The parent variant's instances with what the live copies of every component on it reserve."""
    parent = component.endpoint
    active = parent.deployments.filter(phase="Active").first() or parent.deployments.first()
    spec = hosting_containers.variant_spec(active, component.variant_name)
    count = active.desired[component.variant_name]["DesiredInstanceCount"]
    instances = instances_of(spec["InstanceType"], count)
    copies = ComponentCopy.objects.filter(
        container__deployment__endpoint__runs_component__endpoint=parent,
        container__deployment__endpoint__runs_component__variant_name=component.variant_name,
    ).select_related("container__deployment__endpoint__runs_component")
    for copy in copies:
        if copy.instance >= len(instances):
            continue  # the instance count went down; that copy is on its way out
        row = copy.container
        placed = hosting_containers.variant_spec(row.deployment, row.variant_name)
        # A draining copy still runs, so it still reserves its share until it is gone.
        own = row.deployment.endpoint.runs_component.pk == component.pk and row.status in LIVE_STATUSES
        instances[copy.instance].reserve(Demand.of(placed["ComputeResourceRequirements"]), own)
    return instances


def _create_copy(deployment, variant_name, ordinal, index, demand: Demand, component, live) -> None:
    node = _node_for(component, index, demand, live)
    row = ServingContainer.objects.create(
        deployment=deployment,
        variant_name=variant_name,
        ordinal=ordinal,
        name=hosting_containers.container_name(deployment, variant_name, ordinal, node.name),
        node=node,
    )
    ComponentCopy.objects.create(container=row, instance=index)
    devices = capacity_gpus.free_gpus(node)[: demand.accelerators]
    GpuAllocation.objects.bulk_create(GpuAllocation(container=row, node=node, device_id=d) for d in devices)


def _node_for(component, index: int, demand: Demand, live: list[Node]) -> Node:
    """The node of the instance's copies; for an instance without one, the live node with the
    most free GPUs (then the first name)."""
    if not live:
        raise CapacityUnavailable(
            f"ResourceLimitExceeded: inference component {component.inference_component_name} "
            "needs a worker node, and no node is alive."
        )
    sibling = (
        ComponentCopy.objects.filter(
            instance=index,
            container__deployment__endpoint__runs_component__endpoint=component.endpoint,
            container__deployment__endpoint__runs_component__variant_name=component.variant_name,
        )
        .select_related("container__node")
        .first()
    )
    free = {node.pk: len(capacity_gpus.free_gpus(node)) for node in live}
    if sibling is not None and sibling.container.node.pk in free:
        node = sibling.container.node
    else:
        node = min(live, key=lambda n: (-free[n.pk], n.name))
    if free[node.pk] < demand.accelerators:
        raise CapacityUnavailable(
            f"ResourceLimitExceeded: inference component {component.inference_component_name} needs "
            f"{demand.accelerators} NVIDIA GPUs on node {node.name}, which has {free[node.pk]} free."
        )
    return node
