"""How instance groups are filled with registered nodes, and the statuses that follow."""

from datetime import timedelta

from django.utils import timezone

from clusters import membership
from clusters.models import Cluster
from tests.unit.clusters.helpers import call, group, member_names, register_node, silence


def _describe(name: str) -> dict:
    return call("DescribeCluster", ClusterName=name)


def test_groups_take_live_free_nodes_of_their_type_first_registered_first(db):
    register_node("gpu-a")
    register_node("cpu-a", "ml.m5.large")
    register_node("gpu-lost", lost=True)
    register_node("gpu-b")
    register_node("gpu-c")
    groups = [group("gpus", count=2), group("cpus", "ml.m5.large")]
    call("CreateCluster", ClusterName="first", InstanceGroups=groups)
    assert member_names("first") == {"gpus": ["gpu-a", "gpu-b"], "cpus": ["cpu-a"]}
    described = _describe("first")
    assert described["ClusterStatus"] == "InService"
    counts = [
        (g["InstanceGroupName"], g["CurrentCount"], g["TargetCount"], g["Status"])
        for g in described["InstanceGroups"]
    ]
    assert counts == [("gpus", 2, 2, "InService"), ("cpus", 1, 1, "InService")]

    # A node belongs to one cluster: the second cluster gets what is left.
    call("CreateCluster", ClusterName="second", InstanceGroups=[group(count=2)])
    assert member_names("second") == {"workers": ["gpu-c"]}


def test_a_short_cluster_stays_creating_until_a_node_registers_then_is_in_service(db):
    register_node("gpu-a")
    call("CreateCluster", ClusterName="short", InstanceGroups=[group(count=2)])
    described = _describe("short")
    assert described["ClusterStatus"] == "Creating"
    assert described["InstanceGroups"][0]["Status"] == "Creating"
    assert described["InstanceGroups"][0]["CurrentCount"] == 1

    register_node("gpu-b")
    membership.settle_all()  # what the sweeper and every node registration run
    assert _describe("short")["ClusterStatus"] == "InService"
    assert member_names("short") == {"workers": ["gpu-a", "gpu-b"]}


def test_min_instance_count_is_enough_to_be_in_service_and_the_group_keeps_filling(db):
    register_node("gpu-a")
    call("CreateCluster", ClusterName="partial", InstanceGroups=[group(count=2, MinInstanceCount=1)])
    assert _describe("partial")["ClusterStatus"] == "InService"
    register_node("gpu-b")
    membership.settle_all()
    assert _describe("partial")["InstanceGroups"][0]["CurrentCount"] == 2


def test_continuous_provisioning_is_in_service_at_once(db):
    call("CreateCluster", ClusterName="cont", NodeProvisioningMode="Continuous", InstanceGroups=[group()])
    described = _describe("cont")
    assert described["ClusterStatus"] == "InService" and described["NodeProvisioningMode"] == "Continuous"


def test_a_cluster_still_short_after_the_provisioning_timeout_fails_and_frees_its_nodes(db, settings):
    register_node("gpu-a")
    call("CreateCluster", ClusterName="doomed", InstanceGroups=[group(count=2)])
    settings.SAGEPORT_CLUSTER_PROVISIONING_TIMEOUT_SECONDS = 60
    Cluster.objects.update(provisioning_since=timezone.now() - timedelta(seconds=61))
    membership.settle_all()
    described = _describe("doomed")
    assert described["ClusterStatus"] == "Failed"
    assert described["FailureMessage"].startswith(
        "InsufficientCapacity: Instance group 'workers' holds 1 of 2 ml.g5.12xlarge nodes after 60 seconds"
    )
    assert member_names("doomed") == {}
    call("CreateCluster", ClusterName="next", InstanceGroups=[group()])
    assert member_names("next") == {"workers": ["gpu-a"]}


def test_a_lost_member_shows_failure_with_its_reason_and_degrades_its_group(db):
    node = register_node("gpu-a")
    call("CreateCluster", ClusterName="c", InstanceGroups=[group()])
    silence(node)
    [summary] = call("ListClusterNodes", ClusterName="c")["ClusterNodeSummaries"]
    assert summary["InstanceStatus"]["Status"] == "Failure"
    assert summary["InstanceStatus"]["Message"].startswith("Node gpu-a has sent no heartbeat since ")
    assert _describe("c")["InstanceGroups"][0]["Status"] == "Degraded"
    membership.settle_all()  # NodeRecovery not Automatic: the lost node stays
    assert member_names("c") == {"workers": ["gpu-a"]}


def test_automatic_node_recovery_replaces_a_lost_member_by_a_free_live_node(db):
    node = register_node("gpu-a")
    call("CreateCluster", ClusterName="c", NodeRecovery="Automatic", InstanceGroups=[group()])
    silence(node)
    membership.settle_all()
    assert member_names("c") == {"workers": ["gpu-a"]}  # no spare yet: it stays, shown as Failure
    register_node("gpu-b")
    membership.settle_all()
    assert member_names("c") == {"workers": ["gpu-b"]}


def test_update_raising_a_count_is_updating_until_filled_and_lowering_it_frees_the_newest(db):
    for name in ("gpu-a", "gpu-b"):
        register_node(name)
    call("CreateCluster", ClusterName="c", InstanceGroups=[group()])
    call("UpdateCluster", ClusterName="c", InstanceGroups=[group(count=3)])
    described = _describe("c")
    assert described["ClusterStatus"] == "Updating"
    assert described["InstanceGroups"][0]["Status"] == "Updating"
    register_node("gpu-c")
    membership.settle_all()
    assert _describe("c")["ClusterStatus"] == "InService"
    assert member_names("c") == {"workers": ["gpu-a", "gpu-b", "gpu-c"]}

    register_node("gpu-d")
    membership.settle_all()
    assert member_names("c")["workers"] == ["gpu-a", "gpu-b", "gpu-c"]  # the group is full
    call("UpdateCluster", ClusterName="c", InstanceGroups=[group(count=1)])
    assert member_names("c") == {"workers": ["gpu-a"]}


def test_lowering_a_count_gives_back_lost_members_before_live_ones(db):
    first = register_node("gpu-a")
    register_node("gpu-b")
    call("CreateCluster", ClusterName="c", InstanceGroups=[group(count=2)])
    silence(first)
    call("UpdateCluster", ClusterName="c", InstanceGroups=[group(count=1)])
    assert member_names("c") == {"workers": ["gpu-b"]}


def test_groups_can_be_added_and_deleted_by_an_update(db):
    register_node("gpu-a")
    register_node("cpu-a", "ml.m5.large")
    call("CreateCluster", ClusterName="c", InstanceGroups=[group()])
    call(
        "UpdateCluster",
        ClusterName="c",
        InstanceGroups=[group("cpus", "ml.m5.large")],
        InstanceGroupsToDelete=["workers"],
    )
    assert member_names("c") == {"cpus": ["cpu-a"]}
    assert [g["InstanceGroupName"] for g in _describe("c")["InstanceGroups"]] == ["cpus"]


def test_a_deleted_cluster_shows_deleting_then_is_gone_and_its_nodes_are_free(db):
    register_node("gpu-a")
    arn = call("CreateCluster", ClusterName="c", InstanceGroups=[group()])["ClusterArn"]
    assert call("DeleteCluster", ClusterName=arn) == {"ClusterArn": arn}
    assert _describe("c")["ClusterStatus"] == "Deleting"
    [summary] = call("ListClusterNodes", ClusterName="c")["ClusterNodeSummaries"]
    assert summary["InstanceStatus"]["Status"] == "ShuttingDown"
    membership.settle_all()
    assert not Cluster.objects.exists()
    call("CreateCluster", ClusterName="c", InstanceGroups=[group()])
    assert member_names("c") == {"workers": ["gpu-a"]}


def test_a_node_taken_by_a_racing_pass_is_skipped_and_stays_in_one_cluster(db, monkeypatch):
    taken = register_node("gpu-a")
    spare = register_node("gpu-b")
    call("CreateCluster", ClusterName="first", InstanceGroups=[group()])
    assert member_names("first") == {"workers": ["gpu-a"]}
    # A pass that listed the free nodes before "first" took gpu-a still offers it.
    monkeypatch.setattr(membership, "_free_live_nodes", lambda instance_type, now: [taken, spare])
    call("CreateCluster", ClusterName="second", InstanceGroups=[group()])
    assert member_names("first") == {"workers": ["gpu-a"]}
    assert member_names("second") == {"workers": ["gpu-b"]}
