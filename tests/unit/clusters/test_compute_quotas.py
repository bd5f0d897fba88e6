"""Compute quotas (Create/Describe/List/Update/DeleteComputeQuota): records of a team's share of a
cluster, validated and versioned like cluster policies; one live quota per team and cluster."""

import re

from clusters.models import ClusterPolicy
from protocol.errors import ConflictException, ResourceNotFound, ValidationException
from tests.unit.clusters.helpers import CTX, OTHER_ACCOUNT, call, group, refused

GPUS = {"InstanceType": "ml.g5.12xlarge", "Count": 2}
SHARING = {"Strategy": "LendAndBorrow", "BorrowLimit": 50}


def _cluster(name: str = "c", ctx=CTX) -> str:
    return call("CreateCluster", ctx, ClusterName=name, InstanceGroups=[group()])["ClusterArn"]


def _quota_config(*resources: dict, **extra) -> dict:
    return {"ComputeQuotaResources": list(resources or [GPUS]), **extra}


def _params(cluster_arn: str, team: str, **extra) -> dict:
    return {
        "Name": f"{team}-quota",
        "ClusterArn": cluster_arn,
        "ComputeQuotaConfig": _quota_config(),
        "ComputeQuotaTarget": {"TeamName": team},
        **extra,
    }


def _create(cluster_arn: str, team: str = "vision", ctx=CTX, **extra) -> dict:
    return call("CreateComputeQuota", ctx, **_params(cluster_arn, team, **extra))


def _refused_create(error: type[Exception], cluster_arn: str, team: str = "vision", **extra) -> str:
    return refused(error, "CreateComputeQuota", **_params(cluster_arn, team, **extra))


def _rows() -> list[tuple]:
    fields = ("policy_id", "status", "version", "spec", "scope")
    return list(ClusterPolicy.objects.order_by("pk").values_list(*fields))


def test_a_quota_is_created_described_updated_and_deleted(db):
    cluster_arn = _cluster()
    created = _create(
        cluster_arn,
        ComputeQuotaConfig=_quota_config(ResourceSharingConfig=SHARING, PreemptTeamTasks="LowerPriority"),
        Tags=[{"Key": "team", "Value": "vision"}],
    )
    quota_id, arn = created["ComputeQuotaId"], created["ComputeQuotaArn"]
    assert re.fullmatch(r"[a-z0-9]{12}", quota_id)
    assert arn == f"arn:aws:sagemaker:us-east-1:123456789012:compute-quota/{quota_id}"
    described = call("DescribeComputeQuota", ComputeQuotaId=quota_id)
    assert (described["Name"], described["ClusterArn"]) == ("vision-quota", cluster_arn)
    assert described["Status"] == "Created"
    assert described["ComputeQuotaVersion"] == 1 and described["ActivationState"] == "Enabled"  # the default
    assert described["ComputeQuotaTarget"] == {"TeamName": "vision"}
    assert described["ComputeQuotaConfig"]["ResourceSharingConfig"] == SHARING
    assert call("ListTags", ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "vision"}]

    answer = call("UpdateComputeQuota", ComputeQuotaId=quota_id, TargetVersion=1, ActivationState="Disabled")
    assert answer == {"ComputeQuotaArn": arn, "ComputeQuotaVersion": 2}
    now = call("DescribeComputeQuota", ComputeQuotaId=quota_id)
    assert (now["Status"], now["ActivationState"], now["ComputeQuotaConfig"]) == (
        "Updated",
        "Disabled",
        described["ComputeQuotaConfig"],  # left out: kept
    )
    then = call("DescribeComputeQuota", ComputeQuotaId=quota_id, ComputeQuotaVersion=1)
    assert then["ActivationState"] == "Enabled"

    [summary] = call("ListComputeQuotas", ClusterArn=cluster_arn)["ComputeQuotaSummaries"]
    assert (summary["ComputeQuotaId"], summary["ComputeQuotaTarget"], summary["ActivationState"]) == (
        quota_id,
        {"TeamName": "vision"},
        "Disabled",
    )
    call("DeleteComputeQuota", ComputeQuotaId=quota_id)
    assert call("DescribeComputeQuota", ComputeQuotaId=quota_id)["Status"] == "Deleted"
    message = refused(ResourceNotFound, "DeleteComputeQuota", ComputeQuotaId=quota_id)
    assert message == f"Resource Not Found: Compute quota '{quota_id}' has been deleted."


def test_a_team_has_one_live_quota_per_cluster(db):
    first_cluster, second_cluster = _cluster("a"), _cluster("b")
    vision = _create(first_cluster)["ComputeQuotaId"]
    _create(first_cluster, "speech")  # another team: fine
    _create(second_cluster)  # the same team on another cluster: fine
    before = _rows()
    message = _refused_create(ConflictException, first_cluster)
    assert message == (
        f"Team 'vision' already has compute quota '{vision}' on cluster '{first_cluster}': a team has one "
        "compute quota per cluster; update it instead."
    )
    # Nor may an update move a quota to a team that has one.
    speech = call("ListComputeQuotas", NameContains="speech")["ComputeQuotaSummaries"][0]["ComputeQuotaId"]
    message = refused(
        ConflictException,
        "UpdateComputeQuota",
        ComputeQuotaId=speech,
        TargetVersion=1,
        ComputeQuotaTarget={"TeamName": "vision"},
    )
    assert message.startswith("Team 'vision' already has compute quota")
    assert _rows() == before
    call("DeleteComputeQuota", ComputeQuotaId=vision)
    _create(first_cluster)  # once deleted, the team may have a new one


def test_quotas_that_do_not_fit_the_cluster_are_validation_errors_and_change_nothing(db):
    cluster_arn = _cluster()
    quota_id = _create(cluster_arn)["ComputeQuotaId"]
    before = _rows()
    bad = _quota_config(
        GPUS,
        GPUS,
        {"InstanceType": "ml.p5.48xlarge", "Count": 1},
        ResourceSharingConfig={"Strategy": "Lend", "BorrowLimit": 10},
    )
    expected = (
        "Compute quota instance types must be unique; repeated: ml.g5.12xlarge. "
        "ComputeQuotaConfig.ComputeQuotaResources.3.InstanceType 'ml.p5.48xlarge' is not the type of any "
        "instance group of the cluster. "
        "ResourceSharingConfig.BorrowLimit applies only to the LendAndBorrow strategy, not Lend."
    )
    update = {"ComputeQuotaId": quota_id, "TargetVersion": 1, "ComputeQuotaConfig": bad}
    message = refused(ValidationException, "UpdateComputeQuota", **update)
    assert message == expected
    message = _refused_create(ValidationException, cluster_arn, "other", ComputeQuotaConfig=bad)
    assert message == expected
    target = {"TeamName": "Bad_Team", "FairShareWeight": 101}
    message = _refused_create(ValidationException, cluster_arn, ComputeQuotaTarget=target)
    assert message.startswith("2 validation errors detected: ")
    assert "at 'computeQuotaTarget.fairShareWeight'" in message
    assert "at 'computeQuotaTarget.teamName'" in message
    assert _rows() == before


def test_another_accounts_cluster_and_quotas_are_not_found(db):
    theirs = _cluster("theirs", OTHER_ACCOUNT)
    message = _refused_create(ResourceNotFound, theirs)
    assert message == f"Resource Not Found: Cluster '{theirs}' does not exist."
    quota_id = _create(_cluster())["ComputeQuotaId"]
    message = refused(ResourceNotFound, "DescribeComputeQuota", OTHER_ACCOUNT, ComputeQuotaId=quota_id)
    assert message == f"Resource Not Found: Compute quota '{quota_id}' does not exist."
    assert call("ListComputeQuotas", OTHER_ACCOUNT)["ComputeQuotaSummaries"] == []
    # A quota's id is not a cluster policy's: each kind finds only its own.
    message = refused(ResourceNotFound, "DescribeClusterSchedulerConfig", ClusterSchedulerConfigId=quota_id)
    assert message == f"Resource Not Found: Cluster policy '{quota_id}' does not exist."


def test_list_sorts_by_cluster_arn(db):
    clusters = sorted(_cluster(name) for name in ("a", "b"))
    for position, cluster_arn in enumerate(reversed(clusters)):
        _create(cluster_arn, f"team{position}")
    summaries = call("ListComputeQuotas", SortBy="ClusterArn", SortOrder="Ascending")["ComputeQuotaSummaries"]
    assert [summary["ClusterArn"] for summary in summaries] == clusters
