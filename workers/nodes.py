"""Worker nodes: registration, heartbeats, and declaring a silent node lost.

A node is one worker host with one Docker engine, named by SAGEPORT_NODE_NAME (the host name by
default): every worker process on that host shares the node. Its worker registers the node's
inventory when it starts and heartbeats every SAGEPORT_NODE_HEARTBEAT_SECONDS. The sweeper
declares a node whose heartbeat is older than SAGEPORT_NODE_LOST_AFTER_SECONDS lost; the
training reconciler then fails or restarts the jobs that ran there. A lost node that comes back
first removes the containers it still runs for placements it no longer holds."""
import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from workers import inventory
from workers.models import Node, Placement
from workers.runtime import labels
from workers.runtime.docker import get_runtime

log = logging.getLogger(__name__)


def local_name() -> str:
    return settings.SAGEPORT_NODE_NAME


def queue_name(node: str) -> str:
    """The Celery queue only the workers of `node` consume: steps that touch its engine go there."""
    return f"sageport.node.{node}"


def register() -> Node:
    """Record this host's inventory and mark it alive; then drop containers it no longer owns."""
    found = inventory.detect()
    now = timezone.now()
    node, _ = Node.objects.update_or_create(
        name=found.name,
        defaults={
            "cpus": found.cpus,
            "memory_bytes": found.memory_bytes,
            "gpus": found.gpus_as_json(),
            "registered_at": now,
            "heartbeat_at": now,
            "lost_at": None,
        },
    )
    log.info(
        "node %s registered: %d CPUs, %d MiB, GPUs %s",
        node.name, node.cpus, node.memory_bytes // (1024 * 1024), node.gpu_ids or "none",
    )
    remove_disowned_containers()
    return node


def heartbeat() -> None:
    """Refresh this node's heartbeat; if it was declared lost meanwhile, register it again."""
    alive = Node.objects.filter(name=local_name(), lost_at__isnull=True).update(heartbeat_at=timezone.now())
    if not alive:
        log.warning("node %s had been declared lost (or removed); registering it again", local_name())
        register()


def declare_lost() -> list[Node]:
    """Mark every node whose heartbeat is too old as lost; return the ones this call marked."""
    stale_before = timezone.now() - timedelta(seconds=settings.SAGEPORT_NODE_LOST_AFTER_SECONDS)
    lost = []
    for node in Node.objects.filter(lost_at__isnull=True, heartbeat_at__lt=stale_before):
        # Compare-and-set on the heartbeat seen: a beat that lands meanwhile keeps the node alive.
        if Node.objects.filter(pk=node.pk, heartbeat_at=node.heartbeat_at).update(lost_at=timezone.now()):
            log.warning("node %s lost: no heartbeat since %s", node.name, node.heartbeat_at.isoformat())
            lost.append(node)
    return lost


def remove_disowned_containers() -> None:
    """Remove this node's training containers whose instance is no longer placed here (its jobs
    were restarted elsewhere or failed while the node was lost). The engine is listed before the
    placements are read, and a placement always exists before its container: a container created
    meanwhile is never taken for an orphan."""
    runtime = get_runtime()
    mine = {labels.ROLE: labels.TRAINING_ROLE, labels.NODE: local_name()}
    found = runtime.find({**mine, labels.STACK: settings.SAGEPORT_STACK_ID})
    owned = set(
        Placement.objects.filter(node__name=local_name()).values_list("job__training_job_arn", "host")
    )
    for state in found:
        if (state.labels.get(labels.RESOURCE), state.labels.get(labels.HOST)) not in owned:
            log.info("removing %s: its instance is no longer placed on node %s", state.name, local_name())
            runtime.remove(state.name)
