"""priority_weight: what the schedulers read of the cluster policies an account defines."""

from clusters.priorities import priority_weight
from tests.unit.clusters.helpers import CTX, OTHER_ACCOUNT, OTHER_REGION, call, group


def _policy(cluster_name: str, classes: list[dict], ctx=CTX) -> str:
    cluster_arn = call("CreateCluster", ctx, ClusterName=cluster_name, InstanceGroups=[group()])["ClusterArn"]
    created = call(
        "CreateClusterSchedulerConfig",
        ctx,
        Name=f"{cluster_name}-policy",
        ClusterArn=cluster_arn,
        SchedulerConfig={"PriorityClasses": classes},
    )
    return created["ClusterSchedulerConfigId"]


def _weight(class_name: str, ctx=CTX) -> int | None:
    return priority_weight(ctx.account_id, ctx.region, class_name)


def test_a_class_weighs_what_the_accounts_policy_says_and_an_unknown_class_nothing(db):
    assert _weight("inference") is None  # no policy at all
    _policy("a", [{"Name": "inference", "Weight": 100}, {"Name": "idle", "Weight": 0}])
    assert (_weight("inference"), _weight("idle"), _weight("training")) == (100, 0, None)
    assert _weight("Inference") is None  # names match exactly


def test_another_account_or_region_has_its_own_classes(db):
    _policy("a", [{"Name": "inference", "Weight": 100}])
    _policy("b", [{"Name": "inference", "Weight": 10}], OTHER_ACCOUNT)
    assert (_weight("inference"), _weight("inference", OTHER_ACCOUNT)) == (100, 10)
    assert _weight("inference", OTHER_REGION) is None


def test_the_newest_policy_defining_a_class_wins_and_updates_apply_at_once(db):
    older = _policy("a", [{"Name": "training", "Weight": 20}, {"Name": "batch", "Weight": 5}])
    newer = _policy("b", [{"Name": "training", "Weight": 70}])
    assert (_weight("training"), _weight("batch")) == (70, 5)  # batch only in the older one

    call(
        "UpdateClusterSchedulerConfig",
        ClusterSchedulerConfigId=older,
        TargetVersion=1,
        SchedulerConfig={"PriorityClasses": [{"Name": "batch", "Weight": 15}]},
    )
    assert (_weight("training"), _weight("batch")) == (70, 15)

    call("DeleteClusterSchedulerConfig", ClusterSchedulerConfigId=newer)
    assert _weight("training") is None  # the older one no longer defines it
    call("DeleteClusterSchedulerConfig", ClusterSchedulerConfigId=older)
    assert _weight("batch") is None
