"""The swarm side of a node's life: which swarm node its engine is, and removing a lost one.

With SAGEPORT_MULTI_NODE_NETWORK=overlay the nodes' engines form one Docker swarm. A host that is
lost stays a member of that swarm until a manager removes it, and while a lost *manager* is
counted, the swarm stalls new tasks on the overlay networks it had attachments to: the next
attempt of a job restarted on live engines times out joining the job's network ("attaching to
network failed ... context deadline exceeded", tests/e2e/test_cluster_chaos.py). So a worker
whose own engine is a manager demotes and removes the lost nodes' engines from the swarm, as an
operator would (`docker node demote`, `docker node rm --force`). The removal is due from the
declaration until it succeeds or the node comes back: every sweep tries again what an earlier
one could not do (a swarm without quorum, a busy manager, a sweep on a worker engine), and marks
what it removed (`Node.swarm_removed_at`). A removed engine that comes back rejoins when its
worker registers (capacity/swarm_join.py)."""
import logging

from django.utils import timezone

from capacity.models import Node, SwarmJoin
from runtime.base import RuntimeError_, SwarmMembership
from runtime.docker import get_runtime

log = logging.getLogger(__name__)


def local_membership() -> SwarmMembership | None:
    """This host's engine's node in its swarm; None when it is in no swarm or cannot be asked."""
    try:
        return get_runtime().swarm_membership()
    except RuntimeError_ as error:
        log.warning("could not read this engine's swarm membership: %s", error)
        return None


def recorded(membership: SwarmMembership | None, previous: Node | None) -> dict:
    """The `Node` row's swarm fields for an engine of `membership` (None: outside the swarm). The
    role and address it last had are kept while it is outside (what it rejoins with), and a
    membership the swarm removed stays marked removed (capacity/swarm_join.py leaves it)."""
    if membership is None:
        return {"swarm_node_id": "", "swarm_removed_at": None}
    still_removed = previous is not None and previous.swarm_node_id == membership.node_id
    return {
        "swarm_node_id": membership.node_id,
        "swarm_role": "manager" if membership.manager else "worker",
        "swarm_address": membership.address,
        "swarm_removed_at": previous.swarm_removed_at if still_removed else None,
    }


def remove_lost() -> None:
    """Remove the swarm nodes of lost nodes whose removal is due, through this engine when it is
    a manager. Never raises: a swarm that refuses is logged, tried again at the next sweep, and
    the sweep goes on."""
    due = _due()
    if not due:
        return
    membership = local_membership()
    if membership is None or not membership.manager:
        log.info("lost swarm nodes %s left to a manager: this engine is not one", sorted(due))
        return
    removed = [node_id for node_id in sorted(due - {membership.node_id}) if _remove(node_id)]
    if removed:
        record_join_info(membership)  # the removed managers are gone from the managers to join


def record_join_info(membership: SwarmMembership | None) -> None:
    """When this engine is a manager: keep how to join its swarm where every node reads it (the
    `SwarmJoin` row), for an engine that comes back outside it (capacity/swarm_join.py)."""
    if membership is None or not membership.manager:
        return
    try:
        info = get_runtime().swarm_join_info()
    except RuntimeError_ as error:
        log.warning("could not read how to join this engine's swarm: %s", error)
        return
    SwarmJoin.objects.update_or_create(pk=1, defaults={
        "manager_token": info.manager_token, "worker_token": info.worker_token, "managers": info.managers,
    })


def remove_replaced(node_id: str, name: str) -> None:
    """The swarm node `node_id` that node `name`'s engine stood on before it joined again as a
    new one: removed through this engine when it is a manager, unless another live node stands
    on it; else left (it is down: counted, never used)."""
    membership = local_membership()
    in_use = Node.objects.filter(lost_at__isnull=True, swarm_node_id=node_id).exclude(name=name).exists()
    if membership is not None and membership.manager and node_id != membership.node_id and not in_use:
        _remove(node_id)


def _due() -> set[str]:
    """The swarm nodes of lost nodes not removed yet. Nodes sharing one engine (several Sageport
    nodes on a host) share its swarm node: never one a live node still stands on."""
    lost = Node.objects.filter(lost_at__isnull=False, swarm_removed_at__isnull=True).exclude(swarm_node_id="")
    in_use = Node.objects.filter(lost_at__isnull=True).values_list("swarm_node_id", flat=True)
    return set(lost.values_list("swarm_node_id", flat=True)) - set(in_use)


def _remove(node_id: str) -> bool:
    try:
        get_runtime().remove_swarm_node(node_id)
    except RuntimeError_ as error:
        log.error("could not remove lost swarm node %s from the swarm (tried again at the next sweep): %s",
                  node_id, error)
        return False
    removed = Node.objects.filter(swarm_node_id=node_id, swarm_removed_at__isnull=True)
    removed.update(swarm_removed_at=timezone.now())
    log.warning("removed lost swarm node %s from the swarm (demoted first if a manager)", node_id)
    return True
