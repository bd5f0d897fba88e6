"""Every instance's /etc/hosts names algo-1 … algo-N at fixed addresses of the job's own subnet
(Docker's DNS forgets a container once it exits); an instance without a network still resolves
its own name."""
import ipaddress

import pytest

from jobs import addresses
from runtime.base import Mount
from runtime.fake import FakeRuntime
from tests.unit.training.test_scheduler import make_job, make_node
from training import containers, scheduler, workspace
from training import reconciler as training

pytestmark = pytest.mark.django_db


def test_a_job_is_offered_subnets_of_the_pool_starting_at_one_of_its_own(settings):
    settings.SAGEPORT_TRAINING_SUBNET_POOL = "10.213.0.0/16"

    first, second = addresses.candidate_subnets(7, 2), addresses.candidate_subnets(8, 2)

    assert first[:2] == ["10.213.7.0/24", "10.213.8.0/24"]
    assert second[0] == "10.213.8.0/24"
    assert len(first) == addresses.MAX_CANDIDATES
    pool = ipaddress.IPv4Network("10.213.0.0/16")
    assert all(ipaddress.IPv4Network(subnet).subnet_of(pool) for subnet in first)


def test_a_job_too_big_for_a_24_gets_a_bigger_subnet_and_one_too_big_for_the_pool_none(settings):
    settings.SAGEPORT_TRAINING_SUBNET_POOL = "10.213.0.0/22"  # bridges get its lower /23

    assert addresses.candidate_subnets(1, 300) == ["10.213.0.0/23"]
    assert addresses.candidate_subnets(1, 600) == []


def test_overlays_and_bridges_take_their_subnets_from_halves_of_the_pool_that_never_meet(settings):
    # A training job's overlay and an elastic job's bridge of the same id, on one node: apart.
    settings.SAGEPORT_TRAINING_SUBNET_POOL = "10.213.0.0/16"
    bridges = addresses.candidate_subnets(1, 2)
    overlays = addresses.candidate_subnets(1, 2, overlay=True)

    assert (bridges[0], overlays[0]) == ("10.213.1.0/24", "10.213.129.0/24")
    settings.SAGEPORT_TRAINING_SUBNET_POOL = "10.213.0.0/23"  # the smallest: a /24 for each kind
    assert addresses.candidate_subnets(1, 200) == ["10.213.0.0/24"]
    assert addresses.candidate_subnets(1, 100, overlay=True) == ["10.213.1.0/24"]
    assert addresses.candidate_subnets(1, 200, overlay=True) == []  # needs a /23 of its own
    lower, upper = ipaddress.IPv4Network("10.213.0.0/17"), ipaddress.IPv4Network("10.213.128.0/17")
    assert all(ipaddress.IPv4Network(subnet).subnet_of(lower) for subnet in bridges)
    assert all(ipaddress.IPv4Network(subnet).subnet_of(upper) for subnet in overlays)


@pytest.fixture
def engine(monkeypatch) -> FakeRuntime:
    fake = FakeRuntime(images=("algo:latest",))
    monkeypatch.setattr(training, "get_runtime", lambda: fake)
    return fake


def hosts_file(job, host: str) -> list[str]:
    """The lines of the file mounted read-only at the container's /etc/hosts."""
    host_workspace = workspace.host_workspace(job, host)
    assert Mount(str(host_workspace.hosts_file), "/etc/hosts", read_only=True) in host_workspace.mounts()
    return host_workspace.hosts_file.read_text().splitlines()


def started_specs(job, engine):
    scheduler.place(job)
    workspace.prepare(job, containers.hosts(job))
    states = {host: None for host in containers.hosts(job)}
    assert training.start_missing(job, states) is None
    return {host: engine.containers[containers.container_name(job, host)].spec for host in states}


def test_every_instance_lists_every_peer_at_its_fixed_address(engine, settings):
    settings.SAGEPORT_TRAINING_SUBNET_POOL = "10.213.0.0/16"
    make_node(gpus=0, cpus=8, memory_gib=64)
    job = make_job("ml.m5.large", count=3)

    specs = started_specs(job, engine)

    subnet = engine.networks[containers.network_name(job)]["subnet"]
    expected = addresses.host_addresses(subnet, ["algo-1", "algo-2", "algo-3"])
    assert len(set(expected.values())) == 3
    network = ipaddress.IPv4Network(subnet)
    assert all(ipaddress.ip_address(address) in network for address in expected.values())
    for host, spec in specs.items():
        assert spec.ipv4_address == expected[host]
        assert hosts_file(job, host) == [
            "127.0.0.1\tlocalhost",
            "::1\tlocalhost ip6-localhost ip6-loopback",
            *(f"{address}\t{name}" for name, address in expected.items()),
        ]


def test_two_jobs_offered_the_same_subnets_never_share_one(engine, monkeypatch):
    offered = ["10.213.0.0/24", "10.213.1.0/24"]
    monkeypatch.setattr(addresses, "candidate_subnets", lambda job_id, count, overlay=False: offered)
    make_node(gpus=0, cpus=8, memory_gib=64)
    first, second = make_job("ml.m5.large", count=2), make_job("ml.m5.large", count=2)

    started_specs(first, engine)
    started_specs(second, engine)

    jobs_networks = [engine.networks[containers.network_name(job)] for job in (first, second)]
    assert sorted(network["subnet"] for network in jobs_networks) == offered


def test_an_isolated_lone_instance_has_no_network_but_resolves_its_own_name(engine):
    make_node(gpus=0, cpus=8, memory_gib=64)
    job = make_job("ml.m5.large", EnableNetworkIsolation=True)

    spec = started_specs(job, engine)["algo-1"]

    assert spec.network == "none"
    assert hosts_file(job, "algo-1")[-1] == "127.0.0.1\talgo-1"


def test_an_overlay_network_is_offered_twice_the_room_so_fixed_addresses_stay_in_its_lower_half(settings):
    settings.SAGEPORT_TRAINING_SUBNET_POOL = "10.213.0.0/16"
    bridge = addresses.candidate_subnets(5, 200)
    overlay = addresses.candidate_subnets(5, 200, overlay=True)

    assert ipaddress.IPv4Network(bridge[0]).prefixlen == 24
    assert ipaddress.IPv4Network(overlay[0]).prefixlen == 23
    fixed = addresses.host_addresses(overlay[0], workspace.host_names(200)).values()
    lower_half = list(ipaddress.IPv4Network(overlay[0]).subnets(prefixlen_diff=1))[0]
    assert all(ipaddress.IPv4Address(address) in lower_half for address in fixed)
