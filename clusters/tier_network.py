"""How a training container reaches its node's checkpoint tier service, under the one name AWS's
`amzn-sagemaker-checkpointing` library knows (it has no setting for another).

Each node whose cluster enables the tier has an internal bridge of its own,
`sageport-<stack>-tier-<node>`: no route anywhere, no traffic between containers, and the host's
side of it (the gateway address) is where that node's tier service listens, on the library's
port 9200. A container placed on the node joins it and finds the library's service name in its
/etc/hosts (which Sageport writes) at that address. One network per node rather than one per
engine: two nodes sharing an engine each serve port 9200 on an address of their own.

A network-isolated job gets none of it, as it gets no other service (gateway/environment.py)."""

from dataclasses import dataclass

from django.conf import settings

from clusters import tiering
from runtime import labels
from runtime.base import ContainerRuntime

# The library's InMemoryClientConfig.base_url (amzn_sagemaker_checkpointing/config/in_memory_client.py).
SERVICE_NAME = "ai-toolkit-gossip-headless.aws-hyperpod.svc.cluster.local"
SERVICE_PORT = 9200
# Where the library writes its log (storage_base.py); Sageport mounts a directory of the job's there.
LIBRARY_LOG_PATH = "/var/log/sagemaker_checkpointing"


@dataclass(frozen=True)
class TierReach:
    network: str
    address: str  # the node's tier service as its containers reach it (the network's gateway)

    def host_entries(self) -> dict[str, str]:
        return {SERVICE_NAME: self.address}


def network_name(node_name: str) -> str:
    return f"sageport-{settings.SAGEPORT_STACK_ID}-tier-{node_name}"


def network_labels(node_name: str) -> dict[str, str]:
    return {**labels.own(), labels.ROLE: labels.TIER_ROLE, labels.NODE: node_name}


def ensure(runtime: ContainerRuntime, node_name: str) -> TierReach:
    """The node's tier network, created if missing."""
    name = network_name(node_name)
    return TierReach(name, runtime.ensure_gateway_network(name, network_labels(node_name)))


def reach_for(runtime: ContainerRuntime, node_name: str, *, isolated: bool) -> TierReach | None:
    """What a training container placed on `node_name` reaches of the tier: None when the job is
    network-isolated or the node's cluster does not enable the tier."""
    if isolated or tiering.tier_for_node(node_name) is None:
        return None
    return ensure(runtime, node_name)
