"""The services network: how containers reach Sageport without reaching the host's loopback or
each other.

One internal bridge per Docker engine, `sageport-services`, on the link-local subnet
169.254.170.0/23 with the host's side (the gateway) at 169.254.170.2, the address ECS and
SageMaker serve container credentials on: botocore fetches credentials over plain HTTP only from
loopback, 169.254.170.2 or 169.254.170.23, and a container's loopback is its own. Every
non-isolated training and serving container joins it besides its own network; the forwarder
(gateway/forwarder.py) listens on the gateway address and carries connections to the API, the
data plane and S3.

- Internal: the network routes nowhere. Traffic to the gateway address is delivered to the host
  (iptables INPUT, which Docker leaves alone; on this machine its policy is ACCEPT), so it
  reaches exactly what listens on 169.254.170.2 (the forwarder) or on every address of the host
  (Sageport's own services listen on 127.0.0.1 only). A host whose INPUT chain drops traffic
  from bridges must accept TCP to 169.254.170.2 on the forwarder's ports.
- No inter-container traffic (`enable_icc=false`): Docker drops what the bridge would forward
  from one container to another, so tenants sharing it cannot talk to each other through it.
- Per engine, not per stack: only one network on an engine can hold the gateway address, so
  every stack and every node using one engine shares it (it carries no stack label and no
  stack's clean-up removes it). Each stack's forwarder listens on its own ports.
- /23 (510 addresses) leaves 169.254.169.254, the EC2 metadata address, outside the subnet."""

from runtime.base import ContainerRuntime

SERVICES_NETWORK = "sageport-services"
SUBNET = "169.254.170.0/23"
GATEWAY_ADDRESS = "169.254.170.2"


def ensure(runtime: ContainerRuntime, networks: tuple[str, ...]) -> None:
    """Create the services network before a container that joins it (`networks`: the spec's
    extra networks) is started."""
    if SERVICES_NETWORK in networks:
        runtime.ensure_services_network(SERVICES_NETWORK, SUBNET, GATEWAY_ADDRESS)
