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
