"""Each node's worker keeps the node's checkpoint tier service as its cluster asks
(clusters/tiering.py): running, with the cluster's memory budget and ring of peers, while the
cluster enables the tier; stopped, its memory freed and its network removed when it does not.
The worker checks every SAGEPORT_TIER_AGENT_SECONDS, so UpdateCluster takes effect within that,
and a service that died is started again then.

Connected through Celery's worker signal, so only `celery worker` processes act on it (every
other process imports this module through the clusters app and does nothing). The service is a
child of the worker's main process and dies with it (its checkpoints stay in memory for the next
one)."""

import logging
import threading

from celery.signals import worker_ready
from django.conf import settings
from django.db import connection

from capacity import nodes
from capacity.models import Node
from clusters import tier_network, tiering
from clusters.tier_service import Listeners, Peer, ServiceConfig, TierService
from runtime.base import ContainerRuntime, RuntimeError_
from runtime.docker import get_runtime

log = logging.getLogger(__name__)


class TierAgent:
    def __init__(self, runtime: ContainerRuntime, node_name: str, service: TierService | None = None):
        self.runtime = runtime
        self.node_name = node_name
        self.service = service or TierService(node_name)
        # A network left by an earlier worker of this node is removed once the tier is off.
        self._network_may_exist = True

    def step(self) -> None:
        node = Node.objects.filter(name=self.node_name).first()
        tier = tiering.tier_for_node(self.node_name) if node is not None else None
        if tier is None:
            self._turn_off()
            return
        reach = tier_network.ensure(self.runtime, self.node_name)
        self._network_may_exist = True
        listeners = Listeners(
            containers=f"{reach.address}:{tier_network.SERVICE_PORT}",
            peers=f"{node.address}:{node.tier_peer_port}",
        )
        self.service.apply(listeners, service_config(node, tier))

    def _turn_off(self) -> None:
        self.service.retire()
        if not self._network_may_exist:
            return
        try:
            self.runtime.remove_network(tier_network.network_name(self.node_name))
            self._network_may_exist = False
        except RuntimeError_ as error:  # training containers still on it: removed once they are gone
            log.info("node %s: tier network kept for now: %s", self.node_name, error)


def service_config(node: Node, tier: tiering.NodeTier) -> ServiceConfig:
    members = {member.name: member for member in Node.objects.filter(name__in=tier.ring)}
    peers = tuple(
        Peer(name, f"http://{members[name].address}:{members[name].tier_peer_port}")
        for name in tier.ring if name in members
    )
    return ServiceConfig(
        budget_bytes=node.memory_bytes * tier.memory_percentage // 100,
        grace_seconds=int(settings.SAGEPORT_TIER_NAMESPACE_GRACE_SECONDS),
        peers=peers,
    )


@worker_ready.connect
def start_tier_agent(sender, **kwargs) -> None:
    # Started once the pool is forked, so no pool process inherits the service; the thread lives
    # as long as the worker, as the service's death signal follows the thread that started it.
    threading.Thread(target=_run_forever, name="tier-agent", daemon=True).start()


def _run_forever() -> None:
    agent = TierAgent(get_runtime(), nodes.local_name())
    stop = threading.Event()  # never set: the thread ends with the process
    while True:
        try:
            agent.step()
        except Exception:  # a database or engine hiccup must not end the agent for good
            log.exception("node %s: checkpoint tier agent step failed", agent.node_name)
        finally:
            connection.close()
        if stop.wait(settings.SAGEPORT_TIER_AGENT_SECONDS):
            return
