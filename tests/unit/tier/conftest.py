"""Tier nodes started in this process on 127.0.0.1: their callers are named by an injected
identity table instead of the Docker engine."""

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from devstack.stack import lasting_port
from tier.node import NodeSettings, TierNode

ACCOUNT = "123456789012"
OTHER_ACCOUNT = "210987654321"
JOB = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/tier-test"
OTHER_JOB = f"arn:aws:sagemaker:us-east-1:{OTHER_ACCOUNT}:training-job/tier-test"
TOKEN = "peer-secret"


def wait_for(condition, seconds: float = 20.0) -> None:
    """Poll until `condition()` holds, failing after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.05)


def free_port() -> int:
    """A node's port, chosen before the node starts (the peers' config names it, and a restarted
    node binds it again): below the kernel's ephemeral range, where another test's outgoing
    connection cannot take it meanwhile (a port from bind-to-0 was found taken: "Address already
    in use" in a CI-like run)."""
    return lasting_port()


@dataclass
class Identities:
    """Which job each source address belongs to, and which jobs still run: the tests change it."""

    jobs: dict[str, str] = field(default_factory=lambda: {"127.0.0.1": JOB})
    running: set[str] = field(default_factory=set)

    def job_of(self, address: str) -> str | None:
        return self.jobs.get(address)

    def job_running(self, job_arn: str) -> bool:
        return job_arn in self.running


@dataclass
class Cluster:
    """Nodes named a, b, … in ring order; `start(name)` (re)starts one on its own root and ports."""

    base: Path
    budget_bytes: int
    identities: Identities
    names: list[str]
    ports: dict[str, tuple[int, int]] = field(default_factory=dict)
    nodes: dict[str, TierNode] = field(default_factory=dict)
    peer_io_timeout: float = 5.0
    repair_seconds: float = 0.2
    replica_wait_seconds: float = 10.0

    def __post_init__(self):
        self.ports = {name: (free_port(), free_port()) for name in self.names}
        (self.base / "token").write_text(TOKEN + "\n")
        self.write_config(self.budget_bytes)

    def write_config(self, budget_bytes: int, grace_seconds: int = 3600) -> None:
        peers = [{"node": name, "url": f"http://127.0.0.1:{self.ports[name][1]}"} for name in self.names]
        document = {"budget_bytes": budget_bytes, "grace_seconds": grace_seconds, "peers": peers}
        (self.base / "config.json").write_text(json.dumps(document))

    def root(self, name: str) -> Path:
        return self.base / f"root-{name}"

    def start(self, name: str) -> TierNode:
        container_port, peer_port = self.ports[name]
        node = TierNode(NodeSettings(
            node=name, listen=("127.0.0.1", container_port), peer_listen=("127.0.0.1", peer_port),
            root=self.root(name), config_path=self.base / "config.json", token=TOKEN,
            job_of=self.identities.job_of, job_running=self.identities.job_running,
            peer_connect_timeout=1.0, peer_io_timeout=self.peer_io_timeout,
            repair_seconds=self.repair_seconds, replica_wait_seconds=self.replica_wait_seconds,
        ))
        node.start()
        self.nodes[name] = node
        return node

    def stop(self, name: str) -> None:
        self.nodes.pop(name).stop(timeout=5)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name][0]}"

    def peer_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name][1]}"


@pytest.fixture
def cluster_of(tmp_path):
    """cluster_of(["a", "b"], budget_bytes=…) → a Cluster whose nodes are all started."""
    made = []

    def make(names: list[str], budget_bytes: int = 64 * 1024 * 1024) -> Cluster:
        cluster = Cluster(tmp_path, budget_bytes, Identities(), names)
        for name in names:
            cluster.start(name)
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        for name in list(cluster.nodes):
            cluster.stop(name)
