"""An engine out of the nodes' swarm joins it again when its node's worker registers.

Docker's swarm forgets a removed node: the host that comes back must join again with a join token
(`docker swarm join --token ... <manager>:2377`, the role the token grants; a node still holding
the removed membership leaves it with `docker swarm leave --force` first: Docker docs,
swarm/join-nodes, swarm_leave). Sageport does it itself with what a manager node recorded."""
from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import nodes
from capacity.models import Node, SwarmJoin
from capacity.swarm_join import Plan, plan
from runtime.fake import FAKE_MANAGER_TOKEN, FAKE_WORKER_TOKEN


@pytest.fixture(autouse=True)
def overlay(settings):
    settings.SAGEPORT_SPAN_NODES = True


def _register(settings, monkeypatch, name: str) -> Node:
    monkeypatch.setattr(nodes, "_registered_hooks", [])
    settings.SAGEPORT_NODE_NAME = name
    settings.SAGEPORT_NODE_GPUS = "none"
    return nodes.register()


def _three_managers(settings, monkeypatch, engine) -> None:
    """node-a, -b and -c registered on managers swarm-a/-b/-c, each engine telling the others."""
    addresses = {f"swarm-{n}": f"10.0.0.{i}:2377" for i, n in enumerate("abc", start=1)}
    engine.swarm = True
    for name in "abc":
        engine.swarm_node_id, engine.swarm_address = f"swarm-{name}", f"10.0.0.{'abc'.index(name) + 1}"
        engine.swarm_managers = {i: a for i, a in addresses.items() if i != engine.swarm_node_id}
        _register(settings, monkeypatch, f"node-{name}")


def _lose_and_remove(settings, name: str) -> None:
    """`name` declared lost and its swarm node removed by a manager (capacity/swarm.py)."""
    node = Node.objects.get(name=name)
    Node.objects.filter(pk=node.pk).update(lost_at=timezone.now(), swarm_removed_at=timezone.now())
    join = SwarmJoin.objects.get()
    join.managers.pop(node.swarm_node_id)
    join.save()


def _node(name, swarm_node_id="swarm-a", removed=False) -> Node:
    return Node(name=name, swarm_node_id=swarm_node_id, swarm_role="manager",
                swarm_removed_at=timezone.now() - timedelta(seconds=1) if removed else None)


@pytest.mark.parametrize(("state", "node_id", "previous", "expected"), [
    ("active", "swarm-a", _node("a"), Plan.STAY),
    ("active", "swarm-a", None, Plan.STAY),
    ("inactive", "", _node("a", removed=True), Plan.JOIN),  # removed, its state wiped (a new engine)
    ("inactive", "", None, Plan.STAY),  # a new host: joined by its operator, as the role it should have
    ("inactive", "", Node(name="a"), Plan.STAY),  # registered before, never in a swarm
    ("active", "swarm-a", _node("a", removed=True), Plan.LEAVE_AND_JOIN),  # back with what was removed
    ("active", "swarm-x", _node("a", removed=True), Plan.STAY),  # rejoined meanwhile, by hand
    ("pending", "", _node("a", removed=True), Plan.LEAVE_AND_JOIN),  # retrying the removed membership
    ("pending", "", _node("a"), Plan.WAIT),  # joining
    ("error", "", _node("a"), Plan.LEAVE_AND_JOIN),
    ("locked", "", _node("a"), Plan.WAIT),  # autolock: the unlock key is the operator's
])
def test_what_an_engine_does_about_the_swarm(state, node_id, previous, expected):
    assert plan(state, node_id, previous) is expected


def test_a_removed_managers_engine_back_with_its_state_wiped_rejoins_as_a_manager_through_a_live_one(
    db, settings, monkeypatch, engine
):
    _three_managers(settings, monkeypatch, engine)
    _lose_and_remove(settings, "node-a")
    engine.swarm, engine.swarm_address = False, "unset"  # its engine restarted as a new one

    node = _register(settings, monkeypatch, "node-a")

    assert engine.swarm_joins == [("10.0.0.2:2377", FAKE_MANAGER_TOKEN, "10.0.0.1")]
    assert (node.swarm_node_id, node.swarm_role, node.lost_at, node.swarm_removed_at) == (
        engine.swarm_node_id, "manager", None, None)


def test_an_engine_still_holding_its_removed_membership_leaves_it_first(db, settings, monkeypatch, engine):
    """A host cut off (not restarted) keeps its swarm state: the swarm removed it meanwhile."""
    _three_managers(settings, monkeypatch, engine)
    _lose_and_remove(settings, "node-a")
    engine.swarm_node_id = "swarm-a"  # what its engine still says it is

    node = _register(settings, monkeypatch, "node-a")

    assert engine.swarm_leaves == 1
    assert [join[0] for join in engine.swarm_joins] == ["10.0.0.2:2377"]
    assert node.swarm_node_id.startswith("joined-") and node.swarm_removed_at is None


def test_a_manager_not_reached_is_left_and_the_next_one_tried(db, settings, monkeypatch, engine):
    _three_managers(settings, monkeypatch, engine)
    _lose_and_remove(settings, "node-a")
    engine.swarm = False
    engine.unreached_managers = {"10.0.0.2:2377"}

    node = _register(settings, monkeypatch, "node-a")

    assert [join[0] for join in engine.swarm_joins] == ["10.0.0.2:2377", "10.0.0.3:2377"]
    assert engine.swarm_leaves == 1  # Docker's background retry of the first one stopped
    assert node.swarm_node_id.startswith("joined-")


def test_an_engine_back_before_its_removal_rejoins_and_removes_its_former_swarm_node(
    db, settings, monkeypatch, engine
):
    """Restarted without its swarm state before any sweep removed it: its former swarm node would
    stay counted (down) beside the new one."""
    _three_managers(settings, monkeypatch, engine)
    engine.swarm_nodes = {"swarm-a": "manager"}
    engine.swarm = False

    node = _register(settings, monkeypatch, "node-a")

    assert node.swarm_role == "manager" and node.swarm_node_id != "swarm-a"
    assert engine.swarm_nodes == {}


def test_a_worker_engine_rejoins_as_a_worker_and_a_new_host_is_left_to_its_operator(
    db, settings, monkeypatch, engine
):
    _three_managers(settings, monkeypatch, engine)
    engine.swarm_node_id, engine.swarm_address, engine.swarm_manager = "swarm-w", "10.0.0.7", False
    _register(settings, monkeypatch, "node-w")
    engine.swarm = False
    assert _register(settings, monkeypatch, "node-w").swarm_role == "worker"
    assert engine.swarm_joins == [("10.0.0.1:2377", FAKE_WORKER_TOKEN, "10.0.0.7")]

    engine.swarm = False
    assert _register(settings, monkeypatch, "node-new").swarm_node_id == ""
    assert len(engine.swarm_joins) == 1


def test_a_single_host_swarm_on_the_loopback_is_never_joined_from_outside(db, settings, monkeypatch, engine):
    """`docker swarm init --advertise-addr 127.0.0.1` (tests/e2e/test_training_spanning_nodes.py),
    left again: its manager address reaches the very engine that is outside."""
    engine.swarm, engine.swarm_node_id, engine.swarm_address = True, "swarm-l", "127.0.0.1"
    _register(settings, monkeypatch, "node-a")
    _register(settings, monkeypatch, "node-b")  # the same engine, another node
    engine.swarm = False
    Node.objects.filter(name="node-b").update(swarm_node_id="swarm-other")  # not its own former node
    _register(settings, monkeypatch, "node-b")
    assert engine.swarm_joins == []


def test_a_node_that_cannot_rejoin_registers_outside_the_swarm_keeping_what_it_rejoins_with(
    db, settings, monkeypatch, engine
):
    _three_managers(settings, monkeypatch, engine)
    _lose_and_remove(settings, "node-a")
    engine.swarm = False
    engine.unreached_managers = {"10.0.0.2:2377", "10.0.0.3:2377"}

    node = _register(settings, monkeypatch, "node-a")

    assert (node.lost_at, node.swarm_node_id) == (None, "")  # live: it takes single-node jobs
    assert (node.swarm_role, node.swarm_address) == ("manager", "10.0.0.1")
    engine.unreached_managers = set()
    assert _register(settings, monkeypatch, "node-a").swarm_node_id.startswith("joined-")


def test_nothing_is_joined_without_overlay_networks_or_without_a_recorded_swarm(
    db, settings, monkeypatch, engine
):
    _register(settings, monkeypatch, "node-a")  # no manager ever recorded a swarm
    settings.SAGEPORT_SPAN_NODES = False
    _three_managers(settings, monkeypatch, engine)
    engine.swarm = False
    _register(settings, monkeypatch, "node-a")
    assert engine.swarm_joins == []
