"""The HyperPod cluster API through stock boto3 against the live stack: the session's node
(`test-node-a`, declared `ml.g5.12xlarge` in tests/settings.py) fills an instance group; its
status follows its real heartbeats; bad requests get SageMaker's errors and change nothing."""

import re
import time

import pytest
from botocore.exceptions import ClientError

from tests.e2e.conftest import LOST_FAST, unique_name
from tests.unit.protocol.test_authentication import error_of

NODE_TYPE = "ml.g5.12xlarge"
ROLE = "arn:aws:iam::123456789012:role/HyperPodRole"
# The node is lost once silent for its SAGEPORT_NODE_LOST_AFTER_SECONDS (LOST_FAST's, below).
LOST_PATIENCE_SECONDS = 60


def _group(count: int = 1, name: str = "workers", instance_type: str = NODE_TYPE) -> dict:
    return {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "InstanceCount": count,
        "ExecutionRole": ROLE,
    }


def _poll(read, accept, timeout: float, what: str):
    """Call `read()` until `accept(answer)` (bounded); the last answer is in the failure."""
    deadline = time.monotonic() + timeout
    while True:
        answer = read()
        if accept(answer):
            return answer
        assert time.monotonic() < deadline, f"{what} not reached after {timeout}s: {answer}"
        time.sleep(0.5)


def _arns(sagemaker) -> set[str]:
    return {summary["ClusterArn"] for summary in sagemaker.list_clusters()["ClusterSummaries"]}


def _status_or_error(sagemaker, name: str) -> str:
    try:
        return sagemaker.describe_cluster(ClusterName=name)["ClusterStatus"]
    except ClientError as error:
        return error.response["Error"]["Code"]


def _node_status(sagemaker, cluster: str) -> dict:
    [node] = sagemaker.list_cluster_nodes(ClusterName=cluster)["ClusterNodeSummaries"]
    return node["InstanceStatus"]


@pytest.fixture
def cluster(sagemaker):
    """A cluster of the session's node with the checkpoint tier on; deleted (and waited gone, so
    the node is free again) afterwards."""
    name = unique_name("hp")
    arn = sagemaker.create_cluster(
        ClusterName=name,
        InstanceGroups=[_group()],
        TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20},
        Tags=[{"Key": "team", "Value": "ml"}],
    )["ClusterArn"]
    yield name, arn
    try:
        sagemaker.delete_cluster(ClusterName=arn)
    except ClientError as error:
        assert error.response["Error"]["Code"] == "ResourceNotFound"
    _poll(
        lambda: _arns(sagemaker),
        lambda arns: arn not in arns,
        30,
        "cluster gone",
    )


def test_a_cluster_is_created_from_the_registered_node_described_listed_updated_and_deleted(
    sagemaker, cluster
):
    name, arn = cluster
    assert re.fullmatch(r"arn:aws:sagemaker:us-east-1:\d{12}:cluster/[a-z0-9]{12}", arn)
    described = _poll(
        lambda: sagemaker.describe_cluster(ClusterName=name),
        lambda c: c["ClusterStatus"] == "InService",
        30,
        "InService",
    )
    required = sagemaker.meta.service_model.operation_model("DescribeCluster").output_shape.required_members
    assert set(required) <= set(described)
    assert described["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
    [group] = described["InstanceGroups"]
    assert (group["CurrentCount"], group["TargetCount"], group["Status"]) == (1, 1, "InService")
    assert sagemaker.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "ml"}]

    summaries = sagemaker.list_clusters(NameContains=name)["ClusterSummaries"]
    assert [(s["ClusterName"], s["ClusterArn"], s["ClusterStatus"]) for s in summaries] == [
        (name, arn, "InService")
    ]

    [node] = sagemaker.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
    assert re.fullmatch(r"i-[0-9a-f]{17}", node["InstanceId"])
    assert (node["InstanceGroupName"], node["InstanceType"], node["InstanceStatus"]) == (
        "workers",
        NODE_TYPE,
        {"Status": "Running"},
    )
    details = sagemaker.describe_cluster_node(ClusterName=arn, NodeId=node["InstanceId"])["NodeDetails"]
    assert details["InstanceId"] == node["InstanceId"] and details["LaunchTime"] == node["LaunchTime"]

    sagemaker.update_cluster(
        ClusterName=name, TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 40}
    )
    described = sagemaker.describe_cluster(ClusterName=name)
    assert described["TieredStorageConfig"]["InstanceMemoryAllocationPercentage"] == 40
    assert described["ClusterStatus"] == "InService"
    # One node of that type is registered: a second instance stays wanted, the cluster Updating.
    sagemaker.update_cluster(ClusterName=name, InstanceGroups=[_group(count=2)])
    [group] = sagemaker.describe_cluster(ClusterName=name)["InstanceGroups"]
    assert (group["CurrentCount"], group["TargetCount"], group["Status"]) == (1, 2, "Updating")

    assert sagemaker.delete_cluster(ClusterName=name)["ClusterArn"] == arn
    # Deleting until the next sweep removes it (and frees the node).
    assert _status_or_error(sagemaker, name) in ("Deleting", "ResourceNotFound")
    _poll(lambda: _status_or_error(sagemaker, name), lambda seen: seen == "ResourceNotFound", 30, "deletion")


def test_a_node_whose_worker_stops_shows_failure_and_running_again_when_it_returns(stack, sagemaker, cluster):
    name, _ = cluster
    stack.kill_worker()  # started again with a short silence declared: it shows lost sooner
    stack.start_worker(**LOST_FAST)
    assert _node_status(sagemaker, name) == {"Status": "Running"}
    stack.kill_worker()
    try:
        status = _poll(
            lambda: _node_status(sagemaker, name),
            lambda s: s["Status"] == "Failure",
            LOST_PATIENCE_SECONDS,
            "Failure",
        )
        assert status["Message"].startswith("Node test-node-a has sent no heartbeat since ")
        [group] = sagemaker.describe_cluster(ClusterName=name)["InstanceGroups"]
        assert group["Status"] == "Degraded"
    finally:
        stack.start_worker()
    _poll(
        lambda: _node_status(sagemaker, name),
        lambda s: s == {"Status": "Running"},
        LOST_PATIENCE_SECONDS,
        "Running again",
    )


def test_bad_requests_get_sagemakers_errors_and_change_nothing(sagemaker, cluster):
    name, _ = cluster
    before = _arns(sagemaker)

    code, status, message = error_of(
        lambda: sagemaker.create_cluster(
            ClusterName=unique_name("hp"), InstanceGroups=[_group(instance_type="ml.i3en.large")]
        )
    )
    assert (code, status) == ("ValidationException", 400)
    assert message == "InstanceGroups.1.InstanceType 'ml.i3en.large' is not a known instance type."

    code, status, message = error_of(
        lambda: sagemaker.create_cluster(
            ClusterName=unique_name("hp"), InstanceGroups=[_group(instance_type="ml.nope.large")]
        )
    )
    assert (code, status) == ("ValidationException", 400) and "ml.nope.large" in message

    assert error_of(lambda: sagemaker.create_cluster(ClusterName=name, InstanceGroups=[_group()])) == (
        "ResourceInUse",
        400,
        f"Resource Already Exists: Cluster with name '{name}' already exists. Choose a different name.",
    )
    assert error_of(lambda: sagemaker.describe_cluster(ClusterName="no-such-cluster")) == (
        "ResourceNotFound",
        400,
        "Resource Not Found: Cluster 'no-such-cluster' does not exist.",
    )
    assert error_of(lambda: sagemaker.describe_cluster_node(ClusterName=name, NodeId="i-0123456789abcdef0"))[
        :2
    ] == ("ResourceNotFound", 400)
    waiting = unique_name("hp")  # no free node of this type: it stays Creating
    waiting_arn = sagemaker.create_cluster(
        ClusterName=waiting, InstanceGroups=[_group(instance_type="ml.m5.large")]
    )["ClusterArn"]
    try:
        update = lambda: sagemaker.update_cluster(ClusterName=waiting, InstanceGroups=[_group(0)])  # noqa: E731
        assert error_of(update) == (
            "ConflictException",
            400,
            f"Cluster '{waiting}' is Creating: only an InService cluster can be updated.",
        )
    finally:
        sagemaker.delete_cluster(ClusterName=waiting)
    assert _arns(sagemaker) - {waiting_arn} == before  # the refused requests created nothing
