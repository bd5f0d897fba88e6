"""Node liveness: a silent node is declared lost once, and its heartbeat brings it back."""
from datetime import timedelta

from django.utils import timezone

from capacity import nodes
from capacity.models import Node
from training import reaper


def test_a_silent_node_is_declared_lost_once_and_a_heartbeat_brings_it_back(db, settings, monkeypatch):
    monkeypatch.setattr(nodes, "_registered_hooks", [])  # no engine needed here
    settings.SAGEPORT_NODE_NAME = "node-a"
    settings.SAGEPORT_NODE_GPUS = "0,1"
    nodes.register()
    Node.objects.filter(name="node-a").update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.SAGEPORT_NODE_LOST_AFTER_SECONDS + 1)
    )
    assert [node.name for node in nodes.declare_lost()] == ["node-a"]
    assert nodes.declare_lost() == []

    nodes.heartbeat()
    node = Node.objects.get(name="node-a")
    assert node.lost_at is None and node.gpu_ids == ["0", "1"]


def test_each_node_is_lost_after_the_silence_its_own_worker_declared(db, settings, monkeypatch):
    """A node's worker says how long it may stay silent (its SAGEPORT_NODE_LOST_AFTER_SECONDS);
    the sweeper on another node judges it by that, not by its own setting."""
    monkeypatch.setattr(nodes, "_registered_hooks", [])
    for name, lost_after in (("node-a", 60), ("node-b", 5)):
        settings.SAGEPORT_NODE_NAME = name
        settings.SAGEPORT_NODE_LOST_AFTER_SECONDS = lost_after
        nodes.register()
    Node.objects.update(heartbeat_at=timezone.now() - timedelta(seconds=10))
    assert [node.name for node in Node.objects.order_by("name") if nodes.is_live(node)] == ["node-a"]
    assert [node.name for node in nodes.declare_lost()] == ["node-b"]


def test_registration_runs_the_hooks_features_registered(db, settings, monkeypatch):
    """Training registers the removal of containers its instances no longer own on a node that
    comes back; capacity imports no feature, so it runs what was registered."""
    assert reaper.remove_disowned_containers in nodes._registered_hooks
    ran = []
    monkeypatch.setattr(nodes, "_registered_hooks", [lambda: ran.append(nodes.local_name())])
    settings.SAGEPORT_NODE_NAME = "node-a"
    settings.SAGEPORT_NODE_GPUS = "none"
    nodes.register()
    assert ran == ["node-a"]


def test_registration_records_the_declared_instance_type_and_the_tier_peer_port(db, settings, monkeypatch):
    monkeypatch.setattr(nodes, "_registered_hooks", [])
    settings.SAGEPORT_NODE_NAME = "node-a"
    settings.SAGEPORT_NODE_INSTANCE_TYPE = "ml.g5.12xlarge"
    settings.SAGEPORT_TIER_PEER_PORT = 9301
    node = nodes.register()
    assert (node.instance_type, node.tier_peer_port) == ("ml.g5.12xlarge", 9301)


def test_an_undeclared_node_registers_as_the_largest_hyperpod_type_it_fits(db, settings, monkeypatch):
    monkeypatch.setattr(nodes, "_registered_hooks", [])
    settings.SAGEPORT_NODE_NAME = "node-a"
    settings.SAGEPORT_NODE_INSTANCE_TYPE = ""
    settings.SAGEPORT_NODE_GPUS = "none"
    settings.SAGEPORT_NODE_CPUS = 4
    settings.SAGEPORT_NODE_MEMORY_MIB = 32 * 1024
    # 4 vCPUs and 32 GiB: r6i.xlarge and r7i.xlarge (4, 32 GiB) are the largest; the first name wins.
    assert nodes.register().instance_type == "ml.r6i.xlarge"
