"""tier_for_node: what the node agent and training read to run a node's checkpoint tier."""

from clusters import membership
from clusters.tiering import NodeTier, tier_for_node
from tests.unit.clusters.helpers import call, group, register_node

ENABLED = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 30}


def test_a_node_of_a_tier_enabled_cluster_gets_its_budget_and_the_ring_of_every_member_by_name(db):
    for name in ("node-c", "node-a", "node-b"):
        register_node(name)
    call(
        "CreateCluster",
        ClusterName="tiered",
        TieredStorageConfig=ENABLED,
        InstanceGroups=[group("one"), group("two", count=2)],
    )
    expected = NodeTier(cluster_name="tiered", memory_percentage=30, ring=("node-a", "node-b", "node-c"))
    assert [tier_for_node(name) for name in ("node-a", "node-b", "node-c")] == [expected] * 3


def test_no_tier_outside_a_cluster_or_when_the_cluster_never_enabled_it(db):
    register_node("node-a")
    register_node("node-b")
    assert tier_for_node("node-a") is None
    call("CreateCluster", ClusterName="plain", InstanceGroups=[group()])
    assert tier_for_node("node-a") is None  # a member, but no TieredStorageConfig
    assert tier_for_node("node-b") is None  # no member of any cluster
    assert tier_for_node("no-such-node") is None


def test_update_cluster_changes_the_tier_live_and_disable_turns_it_off(db):
    register_node("node-a")
    call("CreateCluster", ClusterName="c", TieredStorageConfig=ENABLED, InstanceGroups=[group()])
    call(
        "UpdateCluster",
        ClusterName="c",
        TieredStorageConfig={**ENABLED, "InstanceMemoryAllocationPercentage": 55},
    )
    assert tier_for_node("node-a").memory_percentage == 55
    assert call("DescribeCluster", ClusterName="c")["ClusterStatus"] == "InService"
    call("UpdateCluster", ClusterName="c", TieredStorageConfig={"Mode": "Disable"})
    assert tier_for_node("node-a") is None
    assert call("DescribeCluster", ClusterName="c")["TieredStorageConfig"] == {"Mode": "Disable"}


def test_enabled_without_a_percentage_uses_the_default(db):
    register_node("node-a")
    call("CreateCluster", ClusterName="c", TieredStorageConfig={"Mode": "Enable"}, InstanceGroups=[group()])
    assert tier_for_node("node-a").memory_percentage == 20


def test_a_cluster_being_deleted_has_no_tier_and_its_nodes_are_free_afterwards(db):
    register_node("node-a")
    call("CreateCluster", ClusterName="c", TieredStorageConfig=ENABLED, InstanceGroups=[group()])
    call("DeleteCluster", ClusterName="c")
    assert tier_for_node("node-a") is None
    membership.settle_all()
    call("CreateCluster", ClusterName="d", TieredStorageConfig=ENABLED, InstanceGroups=[group()])
    assert tier_for_node("node-a").cluster_name == "d"


def test_a_tier_change_of_a_partly_filled_cluster_applies_without_an_updating_phase(db):
    register_node("node-a")
    groups = [group(count=2, MinInstanceCount=1)]
    call("CreateCluster", ClusterName="c", TieredStorageConfig=ENABLED, InstanceGroups=groups)
    call("UpdateCluster", ClusterName="c", TieredStorageConfig={"Mode": "Disable"})
    assert call("DescribeCluster", ClusterName="c")["ClusterStatus"] == "InService"
    assert tier_for_node("node-a") is None
