"""A lost node's engine is removed from the swarm by the worker that declares it lost.

Docker's swarm keeps a lost manager counted until a manager removes it (`docker node demote`, then
`docker node rm --force`: "Use the --force flag to remove a node that is unreachable ... a manager
must be demoted to worker before removal", Docker docs, swarm/manage-nodes and node_rm); meanwhile
a restarted job's instances time out attaching to its overlay network (tests/e2e/test_cluster_chaos.py)."""
import logging
from datetime import timedelta

from django.utils import timezone

from capacity import nodes
from capacity.models import Node


def _register(settings, monkeypatch, name: str) -> Node:
    monkeypatch.setattr(nodes, "_registered_hooks", [])
    settings.SAGEPORT_NODE_NAME = name
    settings.SAGEPORT_NODE_GPUS = "none"
    return nodes.register()


def _silence(settings, *names: str) -> None:
    Node.objects.filter(name__in=names).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.SAGEPORT_NODE_LOST_AFTER_SECONDS + 1)
    )


def test_a_node_records_its_engines_swarm_node_and_none_outside_a_swarm(db, settings, monkeypatch, engine):
    assert _register(settings, monkeypatch, "node-a").swarm_node_id == ""
    engine.swarm, engine.swarm_node_id = True, "swarm-b"
    assert _register(settings, monkeypatch, "node-b").swarm_node_id == "swarm-b"


def test_the_declaring_manager_removes_the_lost_nodes_swarm_node(db, settings, monkeypatch, engine):
    engine.swarm = True
    engine.swarm_node_id = "swarm-a"
    _register(settings, monkeypatch, "node-a")
    engine.swarm_node_id = "swarm-b"
    _register(settings, monkeypatch, "node-b")
    engine.swarm_node_id = "swarm-c"  # the sweeping worker's engine, a manager
    _register(settings, monkeypatch, "node-c")
    engine.swarm_nodes = {"swarm-a": "manager", "swarm-b": "manager"}

    _silence(settings, "node-a")
    assert [node.name for node in nodes.declare_lost()] == ["node-a"]
    assert engine.swarm_nodes == {"swarm-b": "manager"}
    assert nodes.declare_lost() == []  # once, as the declaration


def test_a_swarm_node_a_live_node_shares_is_kept(db, settings, monkeypatch, engine):
    """Two Sageport nodes on one engine (tests/e2e/test_training_spanning_nodes.py) share its swarm
    node: losing one must not take the engine the other runs on out of the swarm."""
    engine.swarm, engine.swarm_node_id = True, "swarm-shared"
    _register(settings, monkeypatch, "node-a")
    _register(settings, monkeypatch, "node-b")
    engine.swarm_node_id = "swarm-c"
    engine.swarm_nodes = {"swarm-shared": "manager"}
    _silence(settings, "node-a")
    assert [node.name for node in nodes.declare_lost()] == ["node-a"]
    assert engine.swarm_nodes == {"swarm-shared": "manager"}


def test_outside_a_swarm_or_on_a_worker_engine_nothing_is_removed(db, settings, monkeypatch, engine):
    engine.swarm, engine.swarm_node_id = True, "swarm-a"
    _register(settings, monkeypatch, "node-a")
    engine.swarm_nodes = {"swarm-a": "manager"}
    engine.swarm, engine.swarm_node_id = False, "swarm-c"  # the sweeping engine is in no swarm
    _silence(settings, "node-a")
    assert [node.name for node in nodes.declare_lost()] == ["node-a"]
    engine.swarm, engine.swarm_manager = True, False
    Node.objects.filter(name="node-a").update(lost_at=None)
    assert [node.name for node in nodes.declare_lost()] == ["node-a"]  # a worker engine: left to a manager
    assert engine.swarm_nodes == {"swarm-a": "manager"}


def test_a_swarm_refusal_is_logged_and_the_sweep_goes_on(db, settings, monkeypatch, engine, caplog):
    engine.swarm, engine.swarm_node_id = True, "swarm-a"
    _register(settings, monkeypatch, "node-a")
    engine.swarm_node_id = "swarm-c"
    engine.swarm_nodes = {"swarm-a": "manager"}
    engine.swarm_refusal = "rpc error: code = Unknown desc = The swarm does not have a leader."
    _silence(settings, "node-a")
    with caplog.at_level(logging.ERROR, logger="capacity.swarm"):
        assert [node.name for node in nodes.declare_lost()] == ["node-a"]
    assert "could not remove lost swarm node swarm-a" in caplog.text
    assert "does not have a leader" in caplog.text
    assert Node.objects.get(name="node-a").lost_at is not None


def test_an_unreachable_engine_registers_the_node_outside_any_swarm(db, settings, monkeypatch, engine):
    engine.swarm, engine.unreachable = True, True
    assert _register(settings, monkeypatch, "node-a").swarm_node_id == ""
