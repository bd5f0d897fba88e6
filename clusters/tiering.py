"""What a node's in-memory checkpoint tier should be, as its cluster's TieredStorageConfig says.

The node agent asks `tier_for_node` to decide whether to run the node's tier service and with
which budget and peers; training asks it whether a container placed on the node gets the tier."""
from dataclasses import dataclass

from clusters.models import ClusterMember, ClusterStatus

ENABLED = "Enable"
# When TieredStorageConfig enables the tier without InstanceMemoryAllocationPercentage.
DEFAULT_MEMORY_PERCENTAGE = 20
_ENDED = (ClusterStatus.DELETING, ClusterStatus.FAILED)


@dataclass(frozen=True)
class NodeTier:
    cluster_name: str
    memory_percentage: int  # TieredStorageConfig.InstanceMemoryAllocationPercentage
    ring: tuple[str, ...]  # node names of the cluster's tier, stable order, this node included


def tier_for_node(node_name: str) -> NodeTier | None:
    """None when the node is in no cluster or its cluster's tier is Disabled / the cluster is
    being deleted (or failed). The ring is every member of the cluster, live or lost, by name:
    it changes only when membership does, so replicas stay where peers look for them."""
    member = ClusterMember.objects.select_related("group__cluster").filter(node__name=node_name).first()
    if member is None:
        return None
    cluster = member.group.cluster
    config = cluster.tiered_storage or {}
    if cluster.cluster_status in _ENDED or config.get("Mode") != ENABLED:
        return None
    ring = ClusterMember.objects.filter(group__cluster=cluster).order_by("node__name")
    return NodeTier(
        cluster_name=cluster.cluster_name,
        memory_percentage=config.get("InstanceMemoryAllocationPercentage", DEFAULT_MEMORY_PERCENTAGE),
        ring=tuple(ring.values_list("node__name", flat=True)),
    )
