"""The engine's swarm node, and removing a lost one as `docker node demote` + `docker node rm
--force` do (Docker Engine API: NodeInspect, NodeUpdate with the spec's version, NodeDelete with
force; "a manager must be demoted to worker before removal", Docker docs, node_rm)."""
import pytest
from docker.errors import NotFound

from runtime.base import SwarmMembership
from runtime.docker import DockerRuntime


class Api:
    def __init__(self, nodes: dict[str, dict]):
        self.nodes, self.calls = nodes, []

    def inspect_node(self, node_id):
        if node_id not in self.nodes:
            raise NotFound(f"node {node_id} not found")
        return self.nodes[node_id]

    def update_node(self, node_id, version, node_spec):
        self.calls.append(("update", node_id, version, node_spec["Role"]))

    def remove_node(self, node_id, force):
        self.calls.append(("remove", node_id, force))


class Engine:
    def __init__(self, swarm: dict, nodes: dict[str, dict] | None = None):
        self.swarm, self.api = swarm, Api(nodes or {})

    def info(self):
        return {"Swarm": self.swarm}


@pytest.mark.parametrize(("swarm", "membership"), [
    ({"LocalNodeState": "active", "NodeID": "n1", "ControlAvailable": True}, SwarmMembership("n1", True)),
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
