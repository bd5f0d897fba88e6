"""Cluster policies (Create/Describe/List/Update/DeleteClusterSchedulerConfig): SageMaker's shapes
and ids, one live policy per cluster, versions, and refusals with SageMaker's error codes that
change nothing."""

import re

import pytest

from clusters import policies
from clusters.models import Cluster, ClusterPolicy, PolicyRevision
from clusters.policy_kinds import SCHEDULER_CONFIG
from protocol.errors import ConflictException, ResourceNotFound, ValidationException
from tests.unit.clusters.helpers import CTX, OTHER_ACCOUNT, OTHER_REGION, call, group, refused

CLASSES = [{"Name": "inference", "Weight": 100}, {"Name": "training", "Weight": 40}]


def _cluster(name: str = "c", ctx=CTX, **extra) -> str:
    return call("CreateCluster", ctx, ClusterName=name, InstanceGroups=[group()], **extra)["ClusterArn"]


def _create(cluster_arn: str, name: str = "policy", ctx=CTX, **extra) -> dict:
    params = {"SchedulerConfig": {"PriorityClasses": CLASSES, "FairShare": "Enabled"}, **extra}
    return call("CreateClusterSchedulerConfig", ctx, Name=name, ClusterArn=cluster_arn, **params)


def _update(config_id: str, target: int, **params) -> dict:
    params = {"ClusterSchedulerConfigId": config_id, "TargetVersion": target, **params}
    return call("UpdateClusterSchedulerConfig", **params)


def _summaries(ctx=CTX, **params) -> list[dict]:
    return call("ListClusterSchedulerConfigs", ctx, **params)["ClusterSchedulerConfigSummaries"]


def _rows() -> list[tuple]:
    """Everything the database holds about cluster policies, to show a refusal changed nothing."""
    fields = ("policy_id", "status", "version", "spec", "description", "scope", "tags")
    rows = list(ClusterPolicy.objects.order_by("pk").values_list(*fields))
    return rows + list(PolicyRevision.objects.values_list("policy_id", "version"))


def test_create_answers_sagemaker_ids_and_describe_shows_what_was_sent(db):
    cluster_arn = _cluster()
    created = _create(cluster_arn, Description="inference first", Tags=[{"Key": "team", "Value": "ml"}])
    config_id, arn = created["ClusterSchedulerConfigId"], created["ClusterSchedulerConfigArn"]
    assert re.fullmatch(r"[a-z0-9]{12}", config_id)
    assert arn == f"arn:aws:sagemaker:us-east-1:123456789012:cluster-scheduler-config/{config_id}"
    described = call("DescribeClusterSchedulerConfig", ClusterSchedulerConfigId=config_id)
    assert described["ClusterSchedulerConfigArn"] == arn and described["Name"] == "policy"
    assert (described["ClusterSchedulerConfigVersion"], described["Status"]) == (1, "Created")
    assert described["ClusterArn"] == cluster_arn
    assert described["SchedulerConfig"] == {"PriorityClasses": CLASSES, "FairShare": "Enabled"}
    assert described["Description"] == "inference first"
    assert described["CreationTime"] == described["LastModifiedTime"]
    assert call("ListTags", ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "ml"}]
    call("AddTags", ResourceArn=arn, Tags=[{"Key": "tier", "Value": "gold"}])
    assert len(call("ListTags", ResourceArn=arn)["Tags"]) == 2


def test_an_update_from_the_current_version_makes_the_next_and_older_versions_stay_readable(db):
    config_id = _create(_cluster())["ClusterSchedulerConfigId"]
    answer = _update(config_id, 1, SchedulerConfig={"PriorityClasses": [{"Name": "training", "Weight": 90}]})
    assert answer["ClusterSchedulerConfigVersion"] == 2
    current = call("DescribeClusterSchedulerConfig", ClusterSchedulerConfigId=config_id)
    assert (current["ClusterSchedulerConfigVersion"], current["Status"]) == (2, "Updated")
    assert current["SchedulerConfig"] == {"PriorityClasses": [{"Name": "training", "Weight": 90}]}
    assert current["LastModifiedTime"] > current["CreationTime"]
    first = call(
        "DescribeClusterSchedulerConfig", ClusterSchedulerConfigId=config_id, ClusterSchedulerConfigVersion=1
    )
    assert first["ClusterSchedulerConfigVersion"] == 1
    assert first["SchedulerConfig"] == {"PriorityClasses": CLASSES, "FairShare": "Enabled"}

    # A Description alone: the scheduler config is carried over.
    _update(config_id, 2, Description="v3")
    third = call("DescribeClusterSchedulerConfig", ClusterSchedulerConfigId=config_id)
    assert (third["ClusterSchedulerConfigVersion"], third["Description"]) == (3, "v3")
    assert third["SchedulerConfig"] == current["SchedulerConfig"]
    message = refused(
        ResourceNotFound,
        "DescribeClusterSchedulerConfig",
        ClusterSchedulerConfigId=config_id,
        ClusterSchedulerConfigVersion=4,
    )
    assert message == (
        f"Resource Not Found: Cluster policy '{config_id}' has no version 4; its versions are 1 to 3."
    )


def test_an_update_from_a_stale_version_is_a_conflict_and_changes_nothing(db):
    config_id = _create(_cluster())["ClusterSchedulerConfigId"]
    _update(config_id, 1, Description="v2")
    before = _rows()
    message = refused(
        ConflictException,
        "UpdateClusterSchedulerConfig",
        ClusterSchedulerConfigId=config_id,
        TargetVersion=1,
        SchedulerConfig={"PriorityClasses": []},
    )
    assert message == (
        f"TargetVersion 1 is not the current version (2) of cluster policy '{config_id}': describe it and "
        "update from the current version."
    )
    assert _rows() == before


def test_an_update_racing_another_from_the_same_reading_loses_and_changes_nothing(db, monkeypatch):
    config_id = _create(_cluster())["ClusterSchedulerConfigId"]
    stale = policies.get_policy(CTX, SCHEDULER_CONFIG, config_id)  # what both updates read: version 1
    _update(config_id, 1, Description="the winner")
    before = _rows()
    reads = iter([stale])  # the losing update's first read is the stale one; later reads are fresh
    fresh = policies.get_policy
    monkeypatch.setattr(
        policies, "get_policy", lambda ctx, kind, wanted: next(reads, None) or fresh(ctx, kind, wanted)
    )
    with pytest.raises(ConflictException) as raised:
        _update(config_id, 1, Description="the loser")
    assert raised.value.message.startswith("TargetVersion 1 is not the current version (2) of cluster policy")
    assert _rows() == before


def test_a_cluster_has_one_live_policy_and_a_deleted_one_stays_visible_as_deleted(db):
    cluster_arn = _cluster()
    first = _create(cluster_arn)["ClusterSchedulerConfigId"]
    before = _rows()
    message = refused(
        ConflictException,
        "CreateClusterSchedulerConfig",
        Name="second",
        ClusterArn=cluster_arn,
        SchedulerConfig={},
    )
    assert message == (
        f"Cluster '{cluster_arn}' already has cluster policy '{first}': a cluster has one cluster policy; "
        "update it instead."
    )
    assert _rows() == before

    assert call("DeleteClusterSchedulerConfig", ClusterSchedulerConfigId=first) == {}
    assert call("DescribeClusterSchedulerConfig", ClusterSchedulerConfigId=first)["Status"] == "Deleted"
    for operation, extra in (
        ("DeleteClusterSchedulerConfig", {}),
        ("UpdateClusterSchedulerConfig", {"TargetVersion": 1}),
    ):
        message = refused(ResourceNotFound, operation, ClusterSchedulerConfigId=first, **extra)
        assert message == f"Resource Not Found: Cluster policy '{first}' has been deleted."
    second = _create(cluster_arn, "second")["ClusterSchedulerConfigId"]  # the cluster may have a new one
    statuses = {
        s["ClusterSchedulerConfigId"]: s["Status"]
        for s in _summaries()
    }
    assert statuses == {first: "Deleted", second: "Created"}


def test_bad_priority_classes_are_validation_errors_in_awss_words_and_create_nothing(db):
    cluster_arn = _cluster()
    cases = {
        "weight": [{"Name": "low", "Weight": 101}],
        "name": [{"Name": "High_Priority", "Weight": 1}],
        "count": [{"Name": f"c{n}", "Weight": n} for n in range(11)],
        "repeated": [{"Name": "same", "Weight": 1}, {"Name": "same", "Weight": 2}],
    }
    messages = {
        case: refused(
            ValidationException,
            "CreateClusterSchedulerConfig",
            Name="p",
            ClusterArn=cluster_arn,
            SchedulerConfig={"PriorityClasses": classes},
        )
        for case, classes in cases.items()
    }
    assert messages["weight"] == (
        "1 validation error detected: Value '101' at 'schedulerConfig.priorityClasses.1.member.weight' "
        "failed to satisfy constraint: Member must have value less than or equal to 100"
    )
    assert "'High_Priority' at 'schedulerConfig.priorityClasses.1.member.name'" in messages["name"]
    assert "regular expression pattern" in messages["name"]
    assert "at 'schedulerConfig.priorityClasses' failed to satisfy constraint: Member must have length " in (
        messages["count"]
    )
    assert messages["repeated"] == "Priority class names must be unique; repeated: same."
    assert not ClusterPolicy.objects.exists()

    config_id = _create(cluster_arn)["ClusterSchedulerConfigId"]
    before = _rows()
    message = refused(
        ValidationException,
        "UpdateClusterSchedulerConfig",
        ClusterSchedulerConfigId=config_id,
        TargetVersion=1,
        SchedulerConfig={"PriorityClasses": cases["repeated"]},
    )
    assert message == messages["repeated"]
    assert _rows() == before


def test_an_unknown_or_another_accounts_cluster_is_not_found(db):
    mine = _cluster()
    theirs = _cluster("theirs", OTHER_ACCOUNT)
    unknown = re.sub(r"cluster/[a-z0-9]{12}$", "cluster/abcdefghijkl", mine)
    for arn in (theirs, unknown):
        message = refused(
            ResourceNotFound, "CreateClusterSchedulerConfig", Name="p", ClusterArn=arn, SchedulerConfig={}
        )
        assert message == f"Resource Not Found: Cluster '{arn}' does not exist."
    # Nor can another account (or region) see, change or delete a policy.
    config_id = _create(mine)["ClusterSchedulerConfigId"]
    for ctx in (OTHER_ACCOUNT, OTHER_REGION):
        for operation, extra in (
            ("DescribeClusterSchedulerConfig", {}),
            ("UpdateClusterSchedulerConfig", {"TargetVersion": 1}),
            ("DeleteClusterSchedulerConfig", {}),
        ):
            message = refused(ResourceNotFound, operation, ctx, ClusterSchedulerConfigId=config_id, **extra)
            assert message == f"Resource Not Found: Cluster policy '{config_id}' does not exist."
        assert _summaries(ctx) == []
    assert call("DescribeClusterSchedulerConfig", ClusterSchedulerConfigId=config_id)["Status"] == "Created"


def test_a_slurm_or_deleting_cluster_takes_no_policy(db):
    slurm = _cluster("slurm", Orchestrator={"Slurm": {"SlurmConfigStrategy": "Managed"}})
    message = refused(
        ValidationException, "CreateClusterSchedulerConfig", Name="p", ClusterArn=slurm, SchedulerConfig={}
    )
    assert message == (
        "Cluster 'slurm' is orchestrated by Slurm: task governance (cluster policy) needs an "
        "EKS-orchestrated cluster."
    )
    doomed = _cluster("doomed")
    call("DeleteCluster", ClusterName="doomed")
    message = refused(
        ConflictException, "CreateClusterSchedulerConfig", Name="p", ClusterArn=doomed, SchedulerConfig={}
    )
    assert message == "Cluster 'doomed' is Deleting: it takes no cluster policy."
    assert not ClusterPolicy.objects.exists()


def test_deleting_the_cluster_deletes_its_policies(db):
    config_id = _create(_cluster())["ClusterSchedulerConfigId"]
    call("DeleteCluster", ClusterName="c")
    Cluster.objects.all().delete()  # what the next membership pass does to a Deleting cluster
    message = refused(ResourceNotFound, "DescribeClusterSchedulerConfig", ClusterSchedulerConfigId=config_id)
    assert message == f"Resource Not Found: Cluster policy '{config_id}' does not exist."


def test_list_filters_sorts_and_pages(db):
    first, second, third = (_cluster(name) for name in ("a", "b", "c"))
    ids = {
        name: _create(arn, name)["ClusterSchedulerConfigId"]
        for name, arn in (("alpha", first), ("beta", second), ("gamma", third))
    }
    call("DeleteClusterSchedulerConfig", ClusterSchedulerConfigId=ids["beta"])

    def names(**params) -> list[str]:
        return [summary["Name"] for summary in _summaries(**params)]

    assert names() == ["gamma", "beta", "alpha"]  # newest first
    assert names(SortBy="Name", SortOrder="Ascending") == ["alpha", "beta", "gamma"]
    assert names(SortBy="Status") == ["beta", "gamma", "alpha"]  # Deleted after Created, descending
    assert names(Status="Deleted") == ["beta"]
    assert names(ClusterArn=first) == ["alpha"]
    assert names(NameContains="MM") == ["gamma"]
    created = {summary["Name"]: summary["CreationTime"].timestamp() for summary in _summaries()}
    assert names(CreatedAfter=created["alpha"], CreatedBefore=created["gamma"]) == ["beta"]
    by_name = {"MaxResults": 2, "SortBy": "Name", "SortOrder": "Ascending"}
    page = call("ListClusterSchedulerConfigs", **by_name)
    assert [s["Name"] for s in page["ClusterSchedulerConfigSummaries"]] == ["alpha", "beta"]
    rest = call("ListClusterSchedulerConfigs", **by_name, NextToken=page["NextToken"])
    assert [s["Name"] for s in rest["ClusterSchedulerConfigSummaries"]] == ["gamma"]
    assert rest.get("NextToken") is None
    [summary] = _summaries(NameContains="alpha")
    assert summary["ClusterArn"] == first and summary["ClusterSchedulerConfigVersion"] == 1
