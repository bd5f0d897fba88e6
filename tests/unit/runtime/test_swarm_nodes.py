"""The engine's swarm node, and removing a lost one as `docker node demote` + `docker node rm
--force` do (Docker Engine API: NodeInspect, NodeUpdate with the spec's version, NodeDelete with
force; "a manager must be demoted to worker before removal", Docker docs, node_rm)."""
import pytest
from docker.errors import APIError, NotFound

from runtime.base import SwarmJoinInfo, SwarmMembership
from runtime.docker import DockerRuntime


class Api:
    def __init__(self, nodes: dict[str, dict]):
        self.nodes, self.calls, self.outside = nodes, [], False

    def inspect_node(self, node_id):
        if node_id not in self.nodes:
            raise NotFound(f"node {node_id} not found")
        return self.nodes[node_id]

    def update_node(self, node_id, version, node_spec):
        self.calls.append(("update", node_id, version, node_spec["Role"]))

    def remove_node(self, node_id, force):
        self.calls.append(("remove", node_id, force))

    def inspect_swarm(self):
        return {"JoinTokens": {"Manager": "SWMTKN-1-m", "Worker": "SWMTKN-1-w"}}

    def join_swarm(self, remote_addrs, join_token, advertise_addr=None):
        self.calls.append(("join", remote_addrs, join_token, advertise_addr))

    def leave_swarm(self, force=False):
        self.calls.append(("leave", force))
        if self.outside:
            raise APIError("not part of a swarm", response=_Answer(503),
                           explanation="This node is not part of a swarm")


class _Answer:
    def __init__(self, status_code):
        self.status_code, self.reason = status_code, ""


class Engine:
    def __init__(self, swarm: dict, nodes: dict[str, dict] | None = None):
        self.swarm, self.api = swarm, Api(nodes or {})

    def info(self):
        return {"Swarm": self.swarm}


@pytest.mark.parametrize(("swarm", "membership"), [
    ({"LocalNodeState": "active", "NodeID": "n1", "ControlAvailable": True, "NodeAddr": "10.0.0.1"},
     SwarmMembership("n1", True, "10.0.0.1")),
    ({"LocalNodeState": "active", "NodeID": "n2", "ControlAvailable": False}, SwarmMembership("n2", False)),
    ({"LocalNodeState": "inactive", "NodeID": ""}, None),
    ({"LocalNodeState": "error", "NodeID": "n3"}, None),
])
def test_the_engines_swarm_node_is_its_docker_info(swarm, membership):
    assert DockerRuntime(client=Engine(swarm)).swarm_membership() == membership


def test_a_lost_manager_is_demoted_then_removed_with_force():
    spec = {"Role": "manager", "Availability": "active"}
    engine = Engine({}, {"n1": {"Spec": spec, "Version": {"Index": 42}}})
    DockerRuntime(client=engine).remove_swarm_node("n1")
    assert engine.api.calls == [("update", "n1", 42, "worker"), ("remove", "n1", True)]


def test_a_lost_worker_is_removed_and_a_node_already_gone_is_fine():
    engine = Engine({}, {"n2": {"Spec": {"Role": "worker"}, "Version": {"Index": 7}}})
    runtime = DockerRuntime(client=engine)
    runtime.remove_swarm_node("n2")
    runtime.remove_swarm_node("gone")
    assert engine.api.calls == [("remove", "n2", True)]


def test_a_manager_tells_how_to_join_its_swarm():
    """`docker swarm join-token` reads the swarm's JoinTokens (SwarmInspect); `docker info`'s
    Swarm.RemoteManagers lists the managers (NodeID, Addr)."""
    managers = [{"NodeID": "n1", "Addr": "10.0.0.1:2377"}, {"NodeID": "n2", "Addr": "10.0.0.2:2377"}]
    engine = Engine({"LocalNodeState": "active", "RemoteManagers": managers})
    assert DockerRuntime(client=engine).swarm_join_info() == SwarmJoinInfo(
        "SWMTKN-1-m", "SWMTKN-1-w", {"n1": "10.0.0.1:2377", "n2": "10.0.0.2:2377"})
    assert DockerRuntime(client=engine).swarm_state() == "active"


def test_an_engine_joins_through_one_manager_and_leaves_with_force_even_outside_a_swarm():
    engine = Engine({})
    runtime = DockerRuntime(client=engine)
    runtime.join_swarm("10.0.0.2:2377", "SWMTKN-1-m", "10.0.0.1")
    runtime.join_swarm("10.0.0.2:2377", "SWMTKN-1-w")
    runtime.leave_swarm()
    engine.api.outside = True
    runtime.leave_swarm()  # "This node is not part of a swarm" (503): fine
    assert engine.api.calls == [("join", ["10.0.0.2:2377"], "SWMTKN-1-m", "10.0.0.1"),
                                ("join", ["10.0.0.2:2377"], "SWMTKN-1-w", None),
                                ("leave", True), ("leave", True)]
    assert runtime.swarm_state() == "inactive"
