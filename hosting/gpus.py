"""GPUs for serving containers.

A container of an NVIDIA instance type holds its type's GPUs of the hosting node for its whole
life, exclusively: they are the same `GpuAllocation` rows as training instances', unique per
(node, device). A container's row and its GPUs are created in one transaction, so a container
never runs without the GPUs its row says it has; deleting the row (the container is gone) gives
them back. A CPU type holds none.

Serving does not queue for GPUs as training does: when they are not free, the caller decides
(a new fleet fails its deployment; see hosting/reconciler.py)."""

from django.db import IntegrityError, transaction

from capacity import gpus as capacity_gpus
from capacity import instance_types
from capacity.models import GpuAllocation, Node
from hosting import containers as hosting_containers
from hosting.models import ContainerStatus, Endpoint, EndpointDeployment, ServingContainer


class GpusUnavailable(Exception):
    """The new containers cannot have their GPUs; the message (a FailureReason) says what was
    asked and what is free."""


def gpus_per_container(instance_type_name: str) -> int:
    """NVIDIA GPUs one container of the type holds. Other accelerators cannot be given to a
    container: GpusUnavailable."""
    instance_type = instance_types.lookup(instance_type_name)
    if instance_type.accelerator not in (None, "nvidia"):
        raise GpusUnavailable(capacity_gpus.foreign_accelerator_reason(instance_type))
    return instance_type.gpus if instance_type.accelerator == "nvidia" else 0


def add_containers(
    deployment: EndpointDeployment, variant_name: str, ordinals: range, node_name: str
) -> bool:
    """Rows for new containers of a variant, each with its GPUs on `node_name`: all of them or
    none. False when a racing scheduler took a device first (look again); GpusUnavailable when
    the node does not have them free."""
    instance_type = hosting_containers.variant_spec(deployment, variant_name)["InstanceType"]
    per_container = gpus_per_container(instance_type)
    try:
        with transaction.atomic():
            rows = [
                ServingContainer.objects.create(
                    deployment=deployment,
                    variant_name=variant_name,
                    ordinal=ordinal,
                    name=hosting_containers.container_name(deployment, variant_name, ordinal),
                )
                for ordinal in ordinals
            ]
            if per_container:
                asker = f"production variant {variant_name} ({instance_type})"
                _allocate(rows, per_container, node_name, asker)
    except IntegrityError:
        return False
    return True


def _allocate(rows: list[ServingContainer], per_container: int, node_name: str, asker: str) -> None:
    # Locks the node row (PostgreSQL) as the training scheduler does; the unique constraint
    # settles any race that gets past it.
    node = Node.objects.select_for_update().filter(name=node_name).first()
    wanted = per_container * len(rows)
    if node is None:
        raise GpusUnavailable(
            f"ResourceLimitExceeded: {asker} needs {wanted} NVIDIA GPUs on the hosting node {node_name}, "
            "which has not registered (no worker runs there)."
        )
    free = capacity_gpus.free_gpus(node)
    if len(free) < wanted:
        raise GpusUnavailable(
            f"ResourceLimitExceeded: {asker} needs {wanted} NVIDIA GPUs for {len(rows)} more "
            f"container{'s' if len(rows) > 1 else ''} ({per_container} each); the hosting node "
            f"{node.name} has {len(free)} of its {len(node.gpus)} GPUs free."
        )
    devices = iter(free)
    GpuAllocation.objects.bulk_create(
        GpuAllocation(container=row, node=node, device_id=next(devices))
        for row in rows
        for _ in range(per_container)
    )


def gpus_coming_back(endpoint: Endpoint) -> bool:
    """Whether GPUs of the hosting node are about to be freed: held by the endpoint's draining or
    stopping containers (freed once they are gone), or by training jobs that already ended (freed
    by the job's clean-up or the sweeper)."""
    outgoing = (ContainerStatus.DRAINING, ContainerStatus.STOPPING)
    held = GpuAllocation.objects.filter(node__name=endpoint.hosting_node)
    return (
        held.filter(container__deployment__endpoint=endpoint, container__status__in=outgoing).exists()
        or capacity_gpus.release_pending(endpoint.hosting_node)
    )
