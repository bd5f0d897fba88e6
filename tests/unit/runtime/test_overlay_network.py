"""The job network across engines: a Swarm attachable overlay, refused clearly outside a swarm."""
from types import SimpleNamespace

import pytest

from runtime import labels
from runtime.base import MultiHostNetworkUnavailable
from runtime.docker import DockerRuntime


class Networks:
    def __init__(self):
        self.created: list[tuple[str, dict]] = []

    def list(self, names=None, filters=None):
        return []

    def create(self, name, **options):
        self.created.append((name, options))
        return SimpleNamespace(id="n1")

    def get(self, network_id):
        return SimpleNamespace(attrs={"IPAM": {"Config": [{"Subnet": "10.213.7.0/24"}]}})


class Engine:
    def __init__(self, swarm_state: str, manager: bool = True):
        self.networks = Networks()
        self.swarm_state, self.manager = swarm_state, manager

    def info(self):
        return {"Swarm": {"LocalNodeState": self.swarm_state, "ControlAvailable": self.manager}}


def test_an_overlay_network_is_attachable_labelled_like_a_bridge_one_and_keeps_fixed_addresses_free():
    engine = Engine("active")
    runtime = DockerRuntime(client=engine)

    subnet = runtime.ensure_network(
        "job-net", {labels.RESOURCE: "arn"}, subnets=["10.213.7.0/24"], overlay=True
    )

    assert subnet == "10.213.7.0/24"
    ((name, options),) = engine.networks.created
    assert (name, options["driver"], options["attachable"]) == ("job-net", "overlay", True)
    assert options["labels"][labels.RESOURCE] == "arn" and options["labels"][labels.MANAGED] == "true"
    # The swarm's own addresses (one per engine joining) come from the upper half only, so they
    # never take an instance's fixed address (algo-N is the (N+1)-th address).
    (pool,) = options["ipam"]["Config"]
    assert (pool["Subnet"], pool["Gateway"]) == ("10.213.7.0/24", "10.213.7.1")
    assert pool["IPRange"] == "10.213.7.128/25"


@pytest.mark.parametrize("state", ["inactive", "pending", "error"])
def test_an_engine_outside_a_swarm_refuses_an_overlay_network_naming_the_setting(state):
    engine = Engine(state)
    runtime = DockerRuntime(client=engine)

    with pytest.raises(MultiHostNetworkUnavailable) as refused:
        runtime.ensure_network("job-net", {}, overlay=True)

    assert "SAGEPORT_MULTI_NODE_NETWORK=overlay" in str(refused.value) and f'"{state}"' in str(refused.value)
    assert engine.networks.created == []


def test_a_swarm_worker_engine_joins_the_network_a_manager_made_on_the_subnet_recorded():
    engine = Engine("active", manager=False)  # it could not create a swarm network
    runtime = DockerRuntime(client=engine)

    assert runtime.ensure_network("job-net", {}, subnets=["10.213.9.0/24"], overlay=True) == "10.213.9.0/24"
    assert engine.networks.created == []


@pytest.mark.parametrize(("encrypted", "options"), [(False, {}), (True, {"encrypted": ""})])
def test_overlay_networks_are_encrypted_when_configured(settings, encrypted, options):
    """Docker's `docker network create --opt encrypted`: the option is a driver option."""
    settings.SAGEPORT_OVERLAY_ENCRYPTED = encrypted
    engine = Engine("active")

    DockerRuntime(client=engine).ensure_network("job-net", {}, subnets=["10.213.7.0/24"], overlay=True)

    ((_, created),) = engine.networks.created
    assert created["options"] == options
