"""The swarm side of a node's life: which swarm node its engine is, and removing a lost one.

With SAGEPORT_MULTI_NODE_NETWORK=overlay the nodes' engines form one Docker swarm. A host that is
lost stays a member of that swarm until a manager removes it, and while a lost *manager* is
counted, the swarm stalls new tasks on the overlay networks it had attachments to: the next
attempt of a job restarted on live engines times out joining the job's network ("attaching to
network failed ... context deadline exceeded", tests/e2e/test_cluster_chaos.py). So the worker that
declares a node lost demotes and removes the node's engine from the swarm, as an operator would
(`docker node demote`, `docker node rm --force`), when its own engine is a manager. A removed
engine that comes back is outside the swarm: docs/operations.md says how it joins again."""
import logging

from capacity.models import Node
from runtime.base import RuntimeError_
from runtime.docker import get_runtime

log = logging.getLogger(__name__)


def local_node_id() -> str:
    """The swarm node id of this host's engine; "" when it is in no swarm or cannot be asked."""
    try:
        membership = get_runtime().swarm_membership()
    except RuntimeError_ as error:
        log.warning("could not read this engine's swarm membership: %s", error)
        return ""
    return membership.node_id if membership else ""


def remove_lost(lost: list[Node]) -> None:
    """Remove the swarm nodes of the `lost` nodes through this engine, when it is a manager.
    Never raises: a swarm that refuses is logged, and the sweep that declared them goes on."""
    ids = {node.swarm_node_id for node in lost if node.swarm_node_id}
    if not ids:
        return
    try:
        membership = get_runtime().swarm_membership()
    except RuntimeError_ as error:
        log.warning("lost swarm nodes %s not removed: %s", sorted(ids), error)
        return
    if membership is None or not membership.manager:
        log.info("lost swarm nodes %s left to a manager: this engine is not one", sorted(ids))
        return
    # Nodes sharing one engine (several Sageport nodes on a host) share its swarm node: never
    # remove the one a live node (or this one) still stands on.
    in_use = set(Node.objects.filter(lost_at__isnull=True).values_list("swarm_node_id", flat=True))
    for node_id in sorted(ids - in_use - {membership.node_id}):
        try:
            get_runtime().remove_swarm_node(node_id)
            log.warning("removed lost swarm node %s from the swarm (demoted first if a manager)", node_id)
        except RuntimeError_ as error:
            log.error("could not remove lost swarm node %s from the swarm: %s", node_id, error)
