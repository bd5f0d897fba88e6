"""A lost node's engine is removed from the swarm by a sweep on a manager engine, retried until it
succeeds or the node comes back.

Docker's swarm keeps a lost manager counted until a manager removes it (`docker node demote`, then
`docker node rm --force`: "Use the --force flag to remove a node that is unreachable ... a manager
must be demoted to worker before removal", Docker docs, swarm/manage-nodes and node_rm); meanwhile
a restarted job's instances time out attaching to its overlay network (tests/e2e/test_cluster_chaos.py)."""
import logging
from datetime import timedelta

from django.utils import timezone

from capacity import nodes
from capacity.models import Node, SwarmJoin
from runtime.fake import FAKE_MANAGER_TOKEN, FAKE_WORKER_TOKEN


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


def test_a_failed_removal_is_tried_again_at_later_sweeps_until_it_succeeds(
    db, settings, monkeypatch, engine, caplog
):
    """A manager that is busy or a swarm without quorum refuses once; the removal stays due (the
    lost manager would stall the overlays for good) and a later sweep, not a new declaration, does it."""
    engine.swarm, engine.swarm_node_id = True, "swarm-a"
    _register(settings, monkeypatch, "node-a")
    engine.swarm_node_id = "swarm-c"
    _register(settings, monkeypatch, "node-c")
    engine.swarm_nodes = {"swarm-a": "manager"}
    engine.swarm_refusal = "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
    _silence(settings, "node-a")
    with caplog.at_level(logging.ERROR, logger="capacity.swarm"):
        assert [node.name for node in nodes.declare_lost()] == ["node-a"]
        assert nodes.declare_lost() == []  # the next sweep: refused again
    assert caplog.text.count("could not remove lost swarm node swarm-a") == 2
    assert engine.swarm_nodes == {"swarm-a": "manager"}
    assert Node.objects.get(name="node-a").swarm_removed_at is None

    engine.swarm_refusal = ""
    assert nodes.declare_lost() == []
    assert engine.swarm_nodes == {}
    removed_at = Node.objects.get(name="node-a").swarm_removed_at
    assert removed_at is not None
    engine.swarm_nodes = {"swarm-a": "manager"}  # were it counted again, nothing asks twice
    nodes.declare_lost()
    assert engine.swarm_nodes == {"swarm-a": "manager"}
    assert Node.objects.get(name="node-a").swarm_removed_at == removed_at


def test_a_removal_still_due_is_dropped_when_the_node_comes_back(db, settings, monkeypatch, engine):
    engine.swarm, engine.swarm_node_id = True, "swarm-a"
    _register(settings, monkeypatch, "node-a")
    engine.swarm_node_id = "swarm-c"
    engine.swarm_nodes = {"swarm-a": "manager"}
    engine.swarm_manager = False  # the sweep runs on a worker engine: left to a manager
    _silence(settings, "node-a")
    assert [node.name for node in nodes.declare_lost()] == ["node-a"]
    engine.swarm_node_id, engine.swarm_manager = "swarm-a", True
    _register(settings, monkeypatch, "node-a")  # back, on the same swarm node, which it still is
    engine.swarm_node_id = "swarm-c"
    nodes.declare_lost()
    assert engine.swarm_nodes == {"swarm-a": "manager"}


def test_a_manager_node_keeps_how_to_join_its_swarm_and_a_removal_drops_the_removed_manager(
    db, settings, monkeypatch, engine
):
    engine.swarm, engine.swarm_node_id, engine.swarm_address = True, "swarm-a", "10.0.0.1"
    engine.swarm_managers = {"swarm-b": "10.0.0.2:2377"}
    _register(settings, monkeypatch, "node-a")
    join = SwarmJoin.objects.get()
    assert (join.manager_token, join.worker_token) == (FAKE_MANAGER_TOKEN, FAKE_WORKER_TOKEN)
    assert join.managers == {"swarm-a": "10.0.0.1:2377", "swarm-b": "10.0.0.2:2377"}
    node = Node.objects.get(name="node-a")
    assert (node.swarm_role, node.swarm_address) == ("manager", "10.0.0.1")

    engine.swarm_node_id, engine.swarm_address = "swarm-b", "10.0.0.2"
    engine.swarm_managers = {"swarm-a": "10.0.0.1:2377"}
    _register(settings, monkeypatch, "node-b")
    engine.swarm_nodes = {"swarm-a": "manager"}
    _silence(settings, "node-a")
    engine.swarm_managers = {}  # what the swarm tells once swarm-a is removed
    nodes.declare_lost()
    assert SwarmJoin.objects.get().managers == {"swarm-b": "10.0.0.2:2377"}
