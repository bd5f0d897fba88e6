"""Worker nodes: registration, heartbeats, and declaring a silent node lost.

A node is one worker host with one Docker engine, named by SAGEPORT_NODE_NAME (the host name by
default): every worker process on that host shares the node. Its worker registers the node's
inventory when it starts and heartbeats every SAGEPORT_NODE_HEARTBEAT_SECONDS. The sweeper
declares a node whose heartbeat is older than its SAGEPORT_NODE_LOST_AFTER_SECONDS (the node's
own, recorded when it registers) lost; the
training reconciler then fails or restarts the jobs that ran there. A lost node that comes back
first removes the containers it still runs for placements it no longer holds (the training
feature registers that clean-up with `on_registered`). A node records the swarm node of its
engine; lost nodes' swarm nodes are removed by sweeps on a manager engine (capacity/swarm.py), and
an engine out of the swarm joins it again when its node registers (capacity/swarm_join.py)."""
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from capacity import inventory, swarm, swarm_join
from capacity.models import Node

log = logging.getLogger(__name__)

# Run after each registration; features add theirs in their AppConfig.ready (see on_registered).
_registered_hooks: list[Callable[[], None]] = []


def local_name() -> str:
    return settings.SAGEPORT_NODE_NAME


def queue_name(node: str) -> str:
    """The Celery queue only the workers of `node` consume: steps that touch its engine go there."""
    return f"sageport.node.{node}"


def register() -> Node:
    """Record this host's inventory and mark it alive (its engine back in the swarm first, when it
    fell out of it); then drop containers it no longer owns."""
    found = inventory.detect()
    previous = Node.objects.filter(name=found.name).first()
    swarm_join.ensure_member(previous)
    membership = swarm.local_membership()
    swarm.record_join_info(membership)
    now = timezone.now()
    node, _ = Node.objects.update_or_create(
        name=found.name,
        defaults={
            "address": settings.SAGEPORT_NODE_ADDRESS,
            "cpus": found.cpus,
            "memory_bytes": found.memory_bytes,
            "gpus": found.gpus_as_json(),
            "instance_type": found.instance_type,
            "tier_peer_port": settings.SAGEPORT_TIER_PEER_PORT,
            "lost_after_seconds": settings.SAGEPORT_NODE_LOST_AFTER_SECONDS,
            **swarm.recorded(membership, previous),
            "registered_at": now,
            "heartbeat_at": now,
            "lost_at": None,
        },
    )
    log.info(
        "node %s registered at %s: %d CPUs, %d MiB, GPUs %s, instance type %s",
        node.name, node.address, node.cpus, node.memory_bytes // (1024 * 1024), node.gpu_ids or "none",
        node.instance_type or "none (no catalog type fits: set SAGEPORT_NODE_INSTANCE_TYPE)",
    )
    for hook in _registered_hooks:
        hook()
    return node


def heartbeat() -> None:
    """Refresh this node's heartbeat; if it was declared lost meanwhile, register it again."""
    alive = Node.objects.filter(name=local_name(), lost_at__isnull=True).update(heartbeat_at=timezone.now())
    if not alive:
        log.warning("node %s had been declared lost (or removed); registering it again", local_name())
        register()


def is_live(node: Node, now: datetime | None = None) -> bool:
    """Not declared lost, and its heartbeat is recent (the sweeper may not have looked yet)."""
    return node.lost_at is None and not _silent(node, now or timezone.now())


def _silent(node: Node, now: datetime) -> bool:
    """Its heartbeat is older than the silence its worker declared it may keep."""
    lost_after = node.lost_after_seconds or settings.SAGEPORT_NODE_LOST_AFTER_SECONDS
    return node.heartbeat_at < now - timedelta(seconds=lost_after)


def live_names() -> list[str]:
    """The names of the nodes whose workers are alive, in name order."""
    now = timezone.now()
    return [node.name for node in Node.objects.order_by("name") if is_live(node, now)]


def declare_lost() -> list[Node]:
    """Mark every node whose heartbeat is too old as lost, and remove lost nodes' engines from the
    swarm (those an earlier sweep could not remove too); return the ones this call marked."""
    now = timezone.now()
    lost = []
    for node in [node for node in Node.objects.filter(lost_at__isnull=True) if _silent(node, now)]:
        # Compare-and-set on the heartbeat seen: a beat that lands meanwhile keeps the node alive.
        if Node.objects.filter(pk=node.pk, heartbeat_at=node.heartbeat_at).update(lost_at=timezone.now()):
            log.warning("node %s lost: no heartbeat since %s", node.name, node.heartbeat_at.isoformat())
            lost.append(node)
    swarm.remove_lost()
    return lost


def on_registered(hook: Callable[[], None]) -> None:
    """Run `hook()` each time this node registers (features remove what it no longer owns)."""
    if hook not in _registered_hooks:
        _registered_hooks.append(hook)
