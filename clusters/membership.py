"""Which registered nodes make up each cluster, and the cluster status that follows.

The rules (docs/hyperpod.md, "HyperPod clusters"):
- An instance group is filled with up to InstanceCount live registered nodes whose
  `instance_type` is the group's InstanceType and that belong to no cluster, first registered
  (lowest node id) first. Clusters are filled oldest first, a cluster's groups in request order.
- A group holding more members than its count (an update lowered it) gives back its lost members
  first, then its most recently joined ones.
- NodeRecovery Automatic: a lost member is replaced by a free live node of its type when there is
  one (the lost node leaves the cluster); otherwise it stays, shown as Failure.
- Creating → InService once every group holds MinInstanceCount (InstanceCount when not given)
  members; NodeProvisioningMode Continuous is InService at once. Still short after
  SAGEPORT_CLUSTER_PROVISIONING_TIMEOUT_SECONDS → Failed, members released.
- Updating (an update raised a count) → InService once every group is full, or when the timeout
  passes (FailureMessage says which group is short; it keeps filling as nodes register).
- Deleting → the cluster row is removed by the next pass, releasing its nodes.

`settle(cluster)` applies them; it runs after CreateCluster/UpdateCluster, on every sweep and
whenever a node registers. Every step is idempotent and the unique member/node pair makes two
racing passes safe: the loser's insert fails and it skips that node."""
import hashlib
import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from capacity import nodes
from capacity.models import Node
from clusters.models import Cluster, ClusterMember, ClusterStatus, InstanceGroup

log = logging.getLogger(__name__)

CONTINUOUS = "Continuous"
AUTOMATIC_RECOVERY = "Automatic"


def instance_id(node_name: str) -> str:
    """`i-` + 17 hex digits, the form of an EC2 instance id, derived from the node's name: the
    same node keeps its id across restarts and clusters."""
    return "i-" + hashlib.sha256(node_name.encode()).hexdigest()[:17]


def execution_role(node: Node, account_id: str) -> str | None:
    """The ExecutionRole of the instance group `node` serves in, in a cluster of `account_id`:
    what software on a HyperPod node (a pod of its EKS orchestrator) acts as. None when the node
    is in no cluster of the account."""
    member = (
        ClusterMember.objects.filter(node=node, group__cluster__account_id=account_id)
        .select_related("group")
        .first()
    )
    return member.group.spec.get("ExecutionRole") if member else None


def settle_all() -> None:
    for cluster in Cluster.objects.order_by("pk"):
        settle(cluster)


def settle(cluster: Cluster) -> None:
    if cluster.cluster_status == ClusterStatus.DELETING:
        cluster.delete()  # cascades to groups and members: the nodes are free again
        log.info("cluster %s deleted", cluster.cluster_arn)
        return
    if cluster.cluster_status == ClusterStatus.FAILED:
        return
    now = timezone.now()
    groups = list(cluster.instance_groups.all())
    automatic = cluster.request.get("NodeRecovery") == AUTOMATIC_RECOVERY
    for group in groups:
        _release_surplus(group, now)
        if automatic:
            _release_replaceable(group, now)
        _fill(group, now)
    _advance_status(cluster, groups, now)


def _members(group: InstanceGroup) -> list[ClusterMember]:
    return list(group.members.select_related("node").order_by("launch_time", "pk"))


def _free_live_nodes(instance_type: str, now) -> list[Node]:
    free = Node.objects.filter(instance_type=instance_type, cluster_member__isnull=True).order_by("pk")
    return [node for node in free if nodes.is_live(node, now)]


def _release_surplus(group: InstanceGroup, now) -> None:
    members = _members(group)
    surplus = len(members) - group.target_count
    if surplus <= 0:
        return
    # Lost members go first, then the newest (sorted() is stable: newest last within each kind).
    by_priority = sorted(reversed(members), key=lambda member: nodes.is_live(member.node, now))
    for member in by_priority[:surplus]:
        member.delete()


def _release_replaceable(group: InstanceGroup, now) -> None:
    lost = [member for member in _members(group) if not nodes.is_live(member.node, now)]
    spares = _free_live_nodes(group.instance_type, now)
    for member in lost[: len(spares)]:
        log.warning("cluster group %s: replacing lost node %s", group, member.node.name)
        member.delete()


def _fill(group: InstanceGroup, now) -> None:
    missing = group.target_count - group.members.count()
    if missing <= 0:
        return
    for node in _free_live_nodes(group.instance_type, now):
        if missing == 0:
            return
        try:
            with transaction.atomic():
                ClusterMember.objects.create(
                    group=group, node=node, instance_id=instance_id(node.name), launch_time=now
                )
        except IntegrityError:
            continue  # another pass took this node first
        missing -= 1


def needed(group: InstanceGroup, cluster: Cluster) -> int:
    """How many members the group must hold for the cluster to leave Creating."""
    if cluster.request.get("NodeProvisioningMode") == CONTINUOUS:
        return 0
    return group.target_count if group.min_count is None else group.min_count


def _advance_status(cluster: Cluster, groups: list[InstanceGroup], now) -> None:
    counts = {group.pk: group.members.count() for group in groups}
    overdue = now - cluster.provisioning_since > timedelta(
        seconds=settings.SAGEPORT_CLUSTER_PROVISIONING_TIMEOUT_SECONDS
    )
    if cluster.cluster_status == ClusterStatus.CREATING:
        short = [group for group in groups if counts[group.pk] < needed(group, cluster)]
        if not short:
            _move(cluster, ClusterStatus.CREATING, ClusterStatus.IN_SERVICE)
        elif overdue:
            _fail(cluster, short[0], counts[short[0].pk])
    elif cluster.cluster_status == ClusterStatus.UPDATING:
        short = [group for group in groups if counts[group.pk] < group.target_count]
        if not short:
            _move(cluster, ClusterStatus.UPDATING, ClusterStatus.IN_SERVICE, failure_message="")
        elif overdue:
            message = _short_message(short[0], counts[short[0].pk]) + " It keeps filling as nodes register."
            _move(cluster, ClusterStatus.UPDATING, ClusterStatus.IN_SERVICE, failure_message=message)


def _short_message(group: InstanceGroup, count: int) -> str:
    return (
        f"Instance group '{group.name}' holds {count} of {group.target_count} {group.instance_type} nodes "
        f"after {settings.SAGEPORT_CLUSTER_PROVISIONING_TIMEOUT_SECONDS:g} seconds: register more nodes of "
        "that type (SAGEPORT_NODE_INSTANCE_TYPE) or lower its InstanceCount."
    )


def _fail(cluster: Cluster, group: InstanceGroup, count: int) -> None:
    message = "InsufficientCapacity: " + _short_message(group, count)
    with transaction.atomic():
        if _move(cluster, ClusterStatus.CREATING, ClusterStatus.FAILED, failure_message=message):
            ClusterMember.objects.filter(group__cluster=cluster).delete()


def _move(cluster: Cluster, old: str, new: str, **fields) -> bool:
    """Compare-and-set of the status: a request that changed it meanwhile wins."""
    moved = Cluster.objects.filter(pk=cluster.pk, cluster_status=old).update(cluster_status=new, **fields)
    if moved:
        log.info("cluster %s: %s → %s", cluster.cluster_arn, old, new)
        cluster.cluster_status = new
    return bool(moved)
