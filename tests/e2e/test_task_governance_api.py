"""Task governance through stock boto3 against the live stack: cluster policies
(Create/Describe/List/Update/DeleteClusterSchedulerConfig) and compute quotas (the same five for
ComputeQuota). The clusters want an instance type no test node has (ml.m5.large): they stay
Creating, which is enough to hold a policy, and leave the session's node to other tests."""

import re
import time

import pytest
from botocore.exceptions import ClientError

from tests.e2e.conftest import unique_name
from tests.unit.protocol.test_authentication import error_of

OTHER_ACCOUNT_ID = "555566667777"
CLASSES = [{"Name": "inference", "Weight": 100}, {"Name": "training", "Weight": 40}]
# A Deleting cluster is removed (with its policies) by the next sweep.
SWEEP_PATIENCE_SECONDS = 30


def _create_cluster(client, account_id: str = "123456789012") -> str:
    group = {
        "InstanceGroupName": "workers",
        "InstanceType": "ml.m5.large",
        "InstanceCount": 1,
        "ExecutionRole": f"arn:aws:iam::{account_id}:role/HyperPodRole",  # a role of its own account
    }
    return client.create_cluster(ClusterName=unique_name("sched"), InstanceGroups=[group])["ClusterArn"]


def _delete_cluster(client, arn: str) -> None:
    try:
        client.delete_cluster(ClusterName=arn)
    except ClientError as error:
        assert error.response["Error"]["Code"] == "ResourceNotFound"


def _code_of(read) -> str:
    try:
        read()
    except ClientError as error:
        return error.response["Error"]["Code"]
    return "found"


def _poll_gone(read, what: str) -> None:
    deadline = time.monotonic() + SWEEP_PATIENCE_SECONDS
    while (seen := _code_of(read)) != "ResourceNotFound":
        assert time.monotonic() < deadline, f"{what} still {seen} after {SWEEP_PATIENCE_SECONDS}s"
        time.sleep(0.5)


def _summaries(sagemaker, **filters) -> list[dict]:
    return sagemaker.list_cluster_scheduler_configs(**filters)["ClusterSchedulerConfigSummaries"]


@pytest.fixture
def cluster(sagemaker):
    arn = _create_cluster(sagemaker)
    yield arn
    _delete_cluster(sagemaker, arn)


@pytest.fixture
def other_account(stack):
    """A client of another account, and a cluster of its own."""
    key_id, secret = stack.create_access_key(OTHER_ACCOUNT_ID)
    client = stack.client("sagemaker", aws_access_key_id=key_id, aws_secret_access_key=secret)
    arn = _create_cluster(client, OTHER_ACCOUNT_ID)
    yield client, arn
    _delete_cluster(client, arn)
    stack.delete_access_key(key_id)


def test_a_policy_is_created_described_listed_updated_deleted_and_goes_with_its_cluster(sagemaker, cluster):
    created = sagemaker.create_cluster_scheduler_config(
        Name="inference-first",
        ClusterArn=cluster,
        SchedulerConfig={"PriorityClasses": CLASSES, "FairShare": "Enabled"},
        Description="inference before training",
        Tags=[{"Key": "team", "Value": "ml"}],
    )
    config_id, arn = created["ClusterSchedulerConfigId"], created["ClusterSchedulerConfigArn"]
    assert re.fullmatch(r"arn:aws:sagemaker:us-east-1:\d{12}:cluster-scheduler-config/[a-z0-9]{12}", arn)
    assert arn.endswith(f"/{config_id}")
    described = sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
    operation = sagemaker.meta.service_model.operation_model("DescribeClusterSchedulerConfig")
    assert set(operation.output_shape.required_members) <= set(described)
    assert (described["ClusterSchedulerConfigVersion"], described["Status"]) == (1, "Created")
    assert described["SchedulerConfig"] == {"PriorityClasses": CLASSES, "FairShare": "Enabled"}
    assert (described["ClusterArn"], described["Description"]) == (cluster, "inference before training")
    [summary] = _summaries(sagemaker, ClusterArn=cluster)
    assert (summary["ClusterSchedulerConfigId"], summary["Name"], summary["Status"]) == (
        config_id,
        "inference-first",
        "Created",
    )
    assert sagemaker.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "ml"}]

    updated = sagemaker.update_cluster_scheduler_config(
        ClusterSchedulerConfigId=config_id,
        TargetVersion=1,
        SchedulerConfig={"PriorityClasses": [{"Name": "training", "Weight": 90}]},
    )
    assert (updated["ClusterSchedulerConfigArn"], updated["ClusterSchedulerConfigVersion"]) == (arn, 2)
    now = sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
    assert (now["ClusterSchedulerConfigVersion"], now["Status"]) == (2, "Updated")
    assert now["SchedulerConfig"] == {"PriorityClasses": [{"Name": "training", "Weight": 90}]}
    then = sagemaker.describe_cluster_scheduler_config(
        ClusterSchedulerConfigId=config_id, ClusterSchedulerConfigVersion=1
    )
    assert then["SchedulerConfig"] == described["SchedulerConfig"]

    # An update from a stale reading is refused and changes nothing.
    code, status, message = error_of(
        lambda: sagemaker.update_cluster_scheduler_config(
            ClusterSchedulerConfigId=config_id, TargetVersion=1, SchedulerConfig={"PriorityClasses": []}
        )
    )
    assert (code, status) == ("ConflictException", 400)
    assert message.startswith("TargetVersion 1 is not the current version (2) of cluster policy")
    again = sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
    assert again["SchedulerConfig"] == now["SchedulerConfig"] and again["ClusterSchedulerConfigVersion"] == 2

    sagemaker.delete_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
    deleted = sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
    assert deleted["Status"] == "Deleted"
    listed = _summaries(sagemaker, ClusterArn=cluster, Status="Deleted")
    assert [s["ClusterSchedulerConfigId"] for s in listed] == [config_id]
    replacement = sagemaker.create_cluster_scheduler_config(
        Name="replacement", ClusterArn=cluster, SchedulerConfig={"PriorityClasses": CLASSES}
    )["ClusterSchedulerConfigId"]

    sagemaker.delete_cluster(ClusterName=cluster)
    for gone in (config_id, replacement):
        _poll_gone(
            lambda gone=gone: sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=gone),
            f"policy {gone} of the deleted cluster",
        )


def test_bad_requests_get_sagemakers_errors_and_change_nothing(sagemaker, cluster, other_account):
    other, other_cluster = other_account
    kept = sagemaker.create_cluster_scheduler_config(
        Name="kept", ClusterArn=cluster, SchedulerConfig={"PriorityClasses": CLASSES}
    )["ClusterSchedulerConfigId"]
    before = _summaries(sagemaker)

    def create(classes: list[dict], cluster_arn: str = cluster, client=sagemaker):
        return lambda: client.create_cluster_scheduler_config(
            Name="refused", ClusterArn=cluster_arn, SchedulerConfig={"PriorityClasses": classes}
        )

    assert error_of(create([{"Name": "low", "Weight": 101}])) == (
        "ValidationException",
        400,
        "1 validation error detected: Value '101' at 'schedulerConfig.priorityClasses.1.member.weight' "
        "failed to satisfy constraint: Member must have value less than or equal to 100",
    )
    code, status, message = error_of(create([{"Name": "High_Priority", "Weight": 1}]))
    assert (code, status) == ("ValidationException", 400)
    assert "'High_Priority' at 'schedulerConfig.priorityClasses.1.member.name'" in message
    code, status, message = error_of(create([{"Name": f"c{n}", "Weight": n} for n in range(11)]))
    assert (code, status) == ("ValidationException", 400)
    assert "at 'schedulerConfig.priorityClasses' failed to satisfy constraint: Member must have length" in (
        message
    )
    unknown = re.sub(r"/[a-z0-9]{12}$", "/abcdefghijkl", cluster)
    for cluster_arn in (unknown, other_cluster):  # another account's cluster is not found either
        assert error_of(create(CLASSES, cluster_arn)) == (
            "ResourceNotFound",
            400,
            f"Resource Not Found: Cluster '{cluster_arn}' does not exist.",
        )
    code, status, message = error_of(create(CLASSES))
    assert (code, status) == ("ConflictException", 400)
    assert message == (
        f"Cluster '{cluster}' already has cluster policy '{kept}': a cluster has one cluster policy; "
        "update it instead."
    )
    describe_unknown = lambda: sagemaker.describe_cluster_scheduler_config(  # noqa: E731
        ClusterSchedulerConfigId="abcdefghijkl"
    )
    assert error_of(describe_unknown) == (
        "ResourceNotFound",
        400,
        "Resource Not Found: Cluster policy 'abcdefghijkl' does not exist.",
    )
    assert _summaries(sagemaker) == before

    # The other account neither sees nor touches this account's policy.
    assert _summaries(other) == []
    for call in (
        lambda: other.describe_cluster_scheduler_config(ClusterSchedulerConfigId=kept),
        lambda: other.update_cluster_scheduler_config(ClusterSchedulerConfigId=kept, TargetVersion=1),
        lambda: other.delete_cluster_scheduler_config(ClusterSchedulerConfigId=kept),
    ):
        assert error_of(call)[:2] == ("ResourceNotFound", 400)
    assert _summaries(sagemaker) == before


def test_a_teams_compute_quota_is_recorded_versioned_and_refused_when_it_does_not_fit(sagemaker, cluster):
    def create(team: str, config: dict):
        return lambda: sagemaker.create_compute_quota(
            Name=team, ClusterArn=cluster, ComputeQuotaConfig=config, ComputeQuotaTarget={"TeamName": team}
        )

    quota = {"ComputeQuotaResources": [{"InstanceType": "ml.m5.large", "Count": 1}]}
    created = create("vision", quota)()
    quota_id = created["ComputeQuotaId"]
    assert created["ComputeQuotaArn"].endswith(f":compute-quota/{quota_id}")
    described = sagemaker.describe_compute_quota(ComputeQuotaId=quota_id)
    operation = sagemaker.meta.service_model.operation_model("DescribeComputeQuota")
    assert set(operation.output_shape.required_members) <= set(described)
    assert (described["Status"], described["ActivationState"], described["ComputeQuotaVersion"]) == (
        "Created",
        "Enabled",
        1,
    )
    updated = sagemaker.update_compute_quota(
        ComputeQuotaId=quota_id, TargetVersion=1, ActivationState="Disabled"
    )
    assert updated["ComputeQuotaVersion"] == 2
    [summary] = sagemaker.list_compute_quotas(ClusterArn=cluster)["ComputeQuotaSummaries"]
    assert (summary["ComputeQuotaId"], summary["Status"], summary["ActivationState"]) == (
        quota_id,
        "Updated",
        "Disabled",
    )

    elsewhere = {"ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Count": 1}]}
    assert error_of(create("speech", elsewhere)) == (
        "ValidationException",
        400,
        "ComputeQuotaConfig.ComputeQuotaResources.1.InstanceType 'ml.p5.48xlarge' is not the type of any "
        "instance group of the cluster.",
    )
    code, status, message = error_of(create("vision", quota))
    assert (code, status) == ("ConflictException", 400)
    assert message.startswith(f"Team 'vision' already has compute quota '{quota_id}'")
    listed = sagemaker.list_compute_quotas(ClusterArn=cluster)["ComputeQuotaSummaries"]
    assert [s["ComputeQuotaId"] for s in listed] == [quota_id]  # the refused ones created nothing

    sagemaker.delete_compute_quota(ComputeQuotaId=quota_id)
    assert sagemaker.describe_compute_quota(ComputeQuotaId=quota_id)["Status"] == "Deleted"
