"""A node's worker keeps its checkpoint tier service as its cluster asks (clusters/tier_agent.py):
the decisions, with a stand-in process for the service and the fake engine."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capacity.models import Node
from clusters import tier_agent, tier_network, tiering
from clusters.tier_service import TierService
from runtime import labels
from runtime.fake import FakeRuntime
from tests.unit.training.test_scheduler import make_node

GIB = 1024**3
# Stands for `python -m tier`: a process that runs until it is told to stop.
STAND_IN = (sys.executable, "-c", "import time; time.sleep(120)")


@pytest.fixture
def cluster(monkeypatch):
    """What clusters.tiering answers, set by each test: {node name: NodeTier}."""
    tiers: dict[str, tiering.NodeTier] = {}
    monkeypatch.setattr(tiering, "tier_for_node", tiers.get)
    return tiers


@pytest.fixture
def agent(db, settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    settings.SAGEPORT_TIER_MEMORY_DIR = tmp_path / "shm"
    settings.SAGEPORT_TIER_NAMESPACE_GRACE_SECONDS = 600.0
    node_agent = tier_agent.TierAgent(FakeRuntime(), "node-a", TierService("node-a", STAND_IN))
    yield node_agent
    node_agent.service.stop()


def enable(cluster, percentage=25, ring=("node-a", "node-b")):
    for name in ring:
        cluster[name] = tiering.NodeTier("c1", percentage, tuple(ring))


def config_of(agent) -> dict:
    return json.loads((agent.service.files_dir / "config.json").read_text())


def test_a_node_of_a_tier_enabled_cluster_runs_its_service_on_its_own_network(agent, cluster):
    make_node("node-a", memory_gib=8)
    make_node("node-b", memory_gib=16)
    Node.objects.filter(name="node-b").update(address="10.0.0.2")
    enable(cluster, percentage=25)
    agent.step()
    network = agent.runtime.networks[tier_network.network_name("node-a")]
    assert network["internal"] and network["labels"][labels.ROLE] == labels.TIER_ROLE
    assert network["labels"][labels.NODE] == "node-a"
    assert agent.service.running()
    assert agent.service.listeners.containers == f"{network['gateway']}:9200"
    assert agent.service.listeners.peers == "127.0.0.1:9201"
    assert config_of(agent) == {
        "budget_bytes": 2 * GIB,  # 25 % of the node's 8 GiB
        "grace_seconds": 600,
        "peers": [{"node": "node-a", "url": "http://127.0.0.1:9201"}, {"node": "node-b", "url": "http://10.0.0.2:9201"}],
    }
    assert oct(os.stat(agent.service.files_dir / "peer-token").st_mode & 0o777) == "0o600"


def test_a_budget_change_reaches_the_running_service_without_a_restart(agent, cluster):
    make_node("node-a", memory_gib=8)
    enable(cluster, percentage=25, ring=("node-a",))
    agent.step()
    pid = agent.service.process.pid
    enable(cluster, percentage=50, ring=("node-a",))
    agent.step()
    assert agent.service.process.pid == pid
    assert config_of(agent)["budget_bytes"] == 4 * GIB


def test_a_service_that_died_is_started_again(agent, cluster):
    make_node("node-a")
    enable(cluster, ring=("node-a",))
    agent.step()
    first = agent.service.process
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    agent.step()
    assert agent.service.running() and agent.service.process.pid != first.pid


def test_turning_the_tier_off_stops_the_service_frees_its_memory_and_removes_its_network(agent, cluster):
    make_node("node-a")
    enable(cluster, ring=("node-a",))
    agent.step()
    process = agent.service.process
    (agent.service.memory_dir / "a-shard").write_bytes(b"x" * 1024)
    cluster.clear()
    agent.step()
    assert process.poll() is not None and not agent.service.running()
    assert not agent.service.memory_dir.exists()
    assert tier_network.network_name("node-a") not in agent.runtime.networks


def test_a_node_in_no_cluster_runs_nothing(agent, cluster):
    make_node("node-a")
    agent.step()
    assert agent.service.process is None
    assert agent.runtime.networks == {}


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nsenter"), reason="entering namespaces needs root")
def test_a_node_whose_engine_has_a_namespace_of_its_own_runs_its_service_in_there(agent, cluster, settings):
    # The engine's namespace, held by a process of its own.
    holder = subprocess.Popen(["unshare", "--net", "sleep", "60"])
    try:
        namespace = f"/proc/{holder.pid}/ns/net"
        wait_for(lambda: os.readlink(namespace) != os.readlink("/proc/self/ns/net"))
        settings.SAGEPORT_ENGINE_NETNS = namespace
        make_node("node-a")
        enable(cluster, ring=("node-a",))
        agent.step()
        service = f"/proc/{agent.service.process.pid}/ns/net"
        wait_for(lambda: os.readlink(service) == os.readlink(namespace))  # once nsenter has exec'd
        # The service itself, in place of nsenter (no fork): its pid is what the agent stops.
        pid = agent.service.process.pid
        assert os.readlink(f"/proc/{pid}/exe") == os.path.realpath(sys.executable)
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:3]
        assert command == [part.encode() for part in STAND_IN]
        assert agent.service.running()
    finally:
        holder.kill()
        holder.wait(10)


def wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.02)
