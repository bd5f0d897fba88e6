"""A node's engine back in the nodes' swarm when its worker registers.

With SAGEPORT_MULTI_NODE_NETWORK=overlay every node's engine must be in the one swarm, or its
instances cannot join their jobs' overlay networks. An engine falls out of it when its host was
lost and a manager removed it (capacity/swarm.py), when it was restarted without its swarm state,
or when it left. Its worker, as it registers (at start, and again when it finds itself declared
lost), joins it again before the node counts as live: as the role it last had, advertising the
address it last advertised, to a manager the `SwarmJoin` row names (kept there by every manager
node's worker: capacity/swarm.py), live nodes' managers first. A node never in the swarm is left
to its operator, who joins a new host as the role it should have.
Docker's own join goes on retrying in the background after a manager was not reached in time:
the engine leaves again before the next manager is tried."""
import ipaddress
import logging
from enum import Enum

from django.conf import settings

from capacity import swarm
from capacity.models import Node, SwarmJoin
from runtime.base import RuntimeError_
from runtime.docker import get_runtime

log = logging.getLogger(__name__)


class Plan(Enum):
    STAY = "stay"  # a member
    JOIN = "join"  # outside any swarm
    LEAVE_AND_JOIN = "leave and join"  # holding a membership the swarm no longer has
    WAIT = "wait"  # joining already (pending), or locked (its unlock key is the operator's)


def plan(state: str, node_id: str, previous: Node | None) -> Plan:
    """What an engine whose LocalNodeState is `state` on swarm node `node_id` (an active one's)
    does, given its node's row as last registered (None: a new node). Only a node whose engine
    was in the swarm before rejoins it: joining a new host is the operator's choice (its role)."""
    if previous is None or not previous.swarm_role:
        return Plan.STAY
    removed = previous.swarm_removed_at is not None and (
        state != "active" or node_id == previous.swarm_node_id)
    if state == "inactive":
        return Plan.JOIN
    if state == "error" or removed:  # an error state is the daemon failing to take part
        return Plan.LEAVE_AND_JOIN
    return Plan.STAY if state == "active" else Plan.WAIT


def ensure_member(previous: Node | None) -> None:
    """Before registration records the engine's swarm node: rejoin the swarm when the engine is
    out of it. Only with SAGEPORT_MULTI_NODE_NETWORK=overlay. Never raises: a node that could not
    rejoin registers outside the swarm (its spanning jobs fail naming the setting), and tries
    again when it next registers."""
    if not settings.SAGEPORT_SPAN_NODES:
        return
    runtime = get_runtime()
    try:
        state = runtime.swarm_state()
        membership = runtime.swarm_membership() if state == "active" else None
    except RuntimeError_ as error:
        log.warning("could not read this engine's swarm state: %s", error)
        return
    decided = plan(state, membership.node_id if membership else "", previous)
    if decided in (Plan.STAY, Plan.WAIT):
        if decided is Plan.WAIT:
            log.warning("this engine's swarm state is %s: left as it is", state)
        return
    if decided is Plan.LEAVE_AND_JOIN:
        log.warning("this engine holds a swarm membership the swarm no longer has (%s): leaving it", state)
        _leave()
    # `plan` joins only a node that was in the swarm: `previous` is its row.
    replaced = previous.swarm_node_id if previous.swarm_removed_at is None else ""
    if _join(previous) and replaced:
        swarm.remove_replaced(replaced, previous.name)


def _join(previous: Node) -> bool:
    info = SwarmJoin.objects.first()
    if info is None:
        log.warning("this engine is in no swarm and no manager node recorded how to join one")
        return False
    role = previous.swarm_role
    token = info.manager_token if role == "manager" else info.worker_token
    for address in _managers(info, previous):
        try:
            get_runtime().join_swarm(address, token, previous.swarm_address)
        except RuntimeError_ as error:
            log.warning("could not join the swarm through the manager at %s: %s", address, error)
            _leave()  # Docker goes on trying that one in the background: stop it
            continue
        log.warning("this engine joined the swarm again as a %s, through the manager at %s", role, address)
        return True
    log.error("this engine is in no swarm and no manager let it join (tried %s)",
              sorted(info.managers.values()))
    return False


def _managers(info: SwarmJoin, previous: Node) -> list[str]:
    """The managers' addresses to try, those of live nodes' engines first; never this engine's
    own former swarm node (it is the one outside), nor a loopback address (a single-host swarm:
    only the engine outside could have reached it)."""
    live = set(Node.objects.filter(lost_at__isnull=True).values_list("swarm_node_id", flat=True))
    ordered = sorted((node_id not in live, address) for node_id, address in info.managers.items()
                     if node_id != previous.swarm_node_id and not _loopback(address))
    return [address for _, address in ordered]


def _loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        return host == "localhost"


def _leave() -> None:
    try:
        get_runtime().leave_swarm()
    except RuntimeError_ as error:
        log.warning("could not leave the swarm: %s", error)
