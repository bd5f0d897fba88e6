"""Where serving containers run, and the GPUs they hold.

Serving containers are placed on worker nodes like training instances (capacity/): only on a live
node (its heartbeat fresh), and a container of an NVIDIA instance type holds its type's GPUs of
that node for its whole life, exclusively: they are the same `GpuAllocation` rows as training
instances', unique per (node, device). The containers of a variant are spread: each new one goes
to the live node with the fewest live containers of that variant in the deployment, then the
most free GPUs, then the first name, so an instance count of two on two nodes puts one on each.
A container's row, its node and its GPUs are created in one transaction, so a container never
runs without the GPUs its row says it has; deleting the row (the container is gone, or its node
was lost) gives them back. A CPU type holds none.

Serving does not queue for capacity as training does: when it is not there, the caller decides
(a new fleet fails its deployment; see hosting/reconciler.py)."""

from collections import Counter

from django.db import IntegrityError, transaction

from capacity import gpus as capacity_gpus
from capacity import instance_types
from capacity import nodes as capacity_nodes
from capacity.models import GpuAllocation, Node
from hosting import containers as hosting_containers
from hosting.models import ContainerStatus, Endpoint, EndpointDeployment, ServingContainer

LIVE_STATUSES = (ContainerStatus.STARTING, ContainerStatus.IN_SERVICE)


class CapacityUnavailable(Exception):
    """The new containers cannot be placed; the message (a FailureReason) says what was asked and
    what is free."""


def gpus_per_container(instance_type_name: str) -> int:
    """NVIDIA GPUs one container of the type holds. Other accelerators cannot be given to a
    container: CapacityUnavailable."""
    instance_type = instance_types.lookup(instance_type_name)
    if instance_type.accelerator not in (None, "nvidia"):
        raise CapacityUnavailable(capacity_gpus.foreign_accelerator_reason(instance_type))
    return instance_type.gpus if instance_type.accelerator == "nvidia" else 0


def add_containers(deployment: EndpointDeployment, variant_name: str, ordinals: range) -> bool:
    """Rows for new containers of a variant, each placed on a live node with its GPUs there: all
    of them or none. False when a racing scheduler took a device first (look again);
    CapacityUnavailable when the live nodes do not have what they need free."""
    variant = hosting_containers.variant_spec(deployment, variant_name)
    instance_type = variant.get("InstanceType", "serverless")  # a serverless container has no GPU
    per_container = gpus_per_container(instance_type) if "InstanceType" in variant else 0
    asker = f"production variant {variant_name} ({instance_type})"
    try:
        with transaction.atomic():
            # Locks the node rows (PostgreSQL) as the training scheduler does; the unique
            # constraint settles any race that gets past it.
            nodes = Node.objects.select_for_update().order_by("name")
            live = [node for node in nodes if capacity_nodes.is_live(node)]
            _place(deployment, variant_name, ordinals, live, per_container, asker)
    except IntegrityError:
        return False
    return True


def _place(
    deployment: EndpointDeployment,
    variant_name: str,
    ordinals: range,
    live: list[Node],
    per_container: int,
    asker: str,
) -> None:
    if not live:
        raise CapacityUnavailable(
            f"ResourceLimitExceeded: {asker} needs a worker node, and no node is alive (no worker "
            "has registered, or their heartbeats stopped)."
        )
    free = {node.pk: capacity_gpus.free_gpus(node) for node in live}
    siblings = deployment.containers.filter(variant_name=variant_name, status__in=LIVE_STATUSES)
    load = Counter(siblings.values_list("node_id", flat=True))
    if per_container and sum(len(devices) // per_container for devices in free.values()) < len(ordinals):
        raise CapacityUnavailable(_shortage(asker, per_container, len(ordinals), live, free))
    for ordinal in ordinals:
        fitting = [node for node in live if len(free[node.pk]) >= per_container]
        node = min(fitting, key=lambda n: (load[n.pk], -len(free[n.pk]), n.name))
        row = ServingContainer.objects.create(
            deployment=deployment,
            variant_name=variant_name,
            ordinal=ordinal,
            name=hosting_containers.container_name(deployment, variant_name, ordinal, node.name),
            node=node,
        )
        devices, free[node.pk] = free[node.pk][:per_container], free[node.pk][per_container:]
        GpuAllocation.objects.bulk_create(
            GpuAllocation(container=row, node=node, device_id=device) for device in devices
        )
        load[node.pk] += 1


def _shortage(asker: str, per_container: int, count: int, live: list[Node], free: dict) -> str:
    on_nodes = ", ".join(f"{node.name} has {len(free[node.pk])} of its {len(node.gpus)}" for node in live)
    return (
        f"ResourceLimitExceeded: {asker} needs {per_container * count} NVIDIA GPUs for {count} more "
        f"container{'s' if count > 1 else ''} ({per_container} each, each on one node); "
        f"GPUs free: {on_nodes}."
    )


def gpus_coming_back(endpoint: Endpoint) -> bool:
    """Whether GPUs are about to be freed: held by the endpoint's draining or stopping containers
    (freed once they are gone), or by training jobs that already ended on a live node (freed by
    the job's clean-up or the sweeper)."""
    outgoing = (ContainerStatus.DRAINING, ContainerStatus.STOPPING)
    held = GpuAllocation.objects.filter(container__deployment__endpoint=endpoint)
    return held.filter(container__status__in=outgoing).exists() or any(
        capacity_gpus.release_pending(name) for name in capacity_nodes.live_names()
    )


def rotation(endpoint_id: int) -> list[str]:
    """The live nodes that hold containers of the endpoint, in name order: its reconcile chain
    visits each in turn (hosting/tasks.py). Empty while it has none: any worker may take a step."""
    held = ServingContainer.objects.filter(deployment__endpoint_id=endpoint_id)
    names = set(held.values_list("node__name", flat=True))
    return [name for name in capacity_nodes.live_names() if name in names]
