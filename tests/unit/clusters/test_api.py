"""The cluster operations' answers: shapes, ARNs, echoes, listing, and refusals with SageMaker's
error codes that change nothing."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from clusters.models import Cluster
from protocol.errors import ConflictException, ResourceInUse, ResourceNotFound, ValidationException
from tests.unit.clusters.helpers import CTX, ROLE, call, group, register_node

OTHER_ACCOUNT = CTX.__class__(account_id="210987654321", region="us-east-1", access_key_id="AKIDOTHER")


def _refused(error, operation: str, **params) -> str:
    with pytest.raises(error) as raised:
        call(operation, **params)
    return raised.value.message


def test_create_answers_a_sagemaker_cluster_arn_and_describe_echoes_what_was_sent(db):
    register_node("gpu-a")
    lifecycle = {"SourceS3Uri": "s3://bucket/lifecycle/", "OnCreate": "on_create.sh"}
    vpc = {"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]}
    arn = call(
        "CreateCluster",
        ClusterName="train-1",
        InstanceGroups=[group(LifeCycleConfig=lifecycle, ThreadsPerCore=1)],
        VpcConfig=vpc,
        NodeRecovery="Automatic",
        Orchestrator={"Slurm": {"SlurmConfigStrategy": "Managed"}},
        TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 25},
        Tags=[{"Key": "team", "Value": "ml"}],
    )["ClusterArn"]
    assert re.fullmatch(r"arn:aws:sagemaker:us-east-1:123456789012:cluster/[a-z0-9]{12}", arn)
    described = call("DescribeCluster", ClusterName=arn)  # by ARN as well as by name
    assert described["ClusterName"] == "train-1" and described["ClusterArn"] == arn
    assert described["VpcConfig"] == vpc and described["NodeRecovery"] == "Automatic"
    assert described["Orchestrator"] == {"Slurm": {"SlurmConfigStrategy": "Managed"}}
    assert described["TieredStorageConfig"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 25}
    [details] = described["InstanceGroups"]
    assert details["LifeCycleConfig"] == lifecycle and details["ExecutionRole"] == ROLE
    assert details["ThreadsPerCore"] == 1 and details["InstanceType"] == "ml.g5.12xlarge"
    assert call("ListTags", ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "ml"}]


def test_nodes_are_listed_and_described_by_a_stable_instance_id(db):
    register_node("gpu-a")
    call("CreateCluster", ClusterName="c", InstanceGroups=[group()])
    [summary] = call("ListClusterNodes", ClusterName="c", IncludeNodeLogicalIds=True)["ClusterNodeSummaries"]
    assert re.fullmatch(r"i-[0-9a-f]{17}", summary["InstanceId"])
    assert summary["NodeLogicalId"] == summary["InstanceId"]
    assert summary["InstanceGroupName"] == "workers" and summary["InstanceType"] == "ml.g5.12xlarge"
    assert summary["InstanceStatus"] == {"Status": "Running"}
    details = call("DescribeClusterNode", ClusterName="c", NodeId=summary["InstanceId"])["NodeDetails"]
    assert details["InstanceId"] == summary["InstanceId"] and details["PrivatePrimaryIp"] == "127.0.0.1"
    assert details["LaunchTime"] == summary["LaunchTime"]

    call("DeleteCluster", ClusterName="c")
    Cluster.objects.all().delete()
    call("CreateCluster", ClusterName="again", InstanceGroups=[group()])
    [again] = call("ListClusterNodes", ClusterName="again")["ClusterNodeSummaries"]
    assert again["InstanceId"] == summary["InstanceId"]  # the node keeps its id


def test_describe_cluster_node_refuses_an_unknown_node_and_needs_exactly_one_id(db):
    register_node("gpu-a")
    call("CreateCluster", ClusterName="c", InstanceGroups=[group()])
    message = _refused(ResourceNotFound, "DescribeClusterNode", ClusterName="c", NodeId="i-0123456789abcdef0")
    assert message == "Resource Not Found: Node 'i-0123456789abcdef0' is not part of cluster 'c'."
    assert _refused(ValidationException, "DescribeClusterNode", ClusterName="c") == (
        "Specify either NodeId or NodeLogicalId, but not both."
    )


def test_a_duplicate_name_is_resource_in_use_and_changes_nothing(db):
    call("CreateCluster", ClusterName="dup", InstanceGroups=[group()])
    message = _refused(ResourceInUse, "CreateCluster", ClusterName="dup", InstanceGroups=[group("other")])
    assert (
        message == "Resource Already Exists: Cluster with name 'dup' already exists. Choose a different name."
    )
    assert Cluster.objects.count() == 1
    assert [g["InstanceGroupName"] for g in call("DescribeCluster", ClusterName="dup")["InstanceGroups"]] == [
        "workers"
    ]


def test_requests_sageport_cannot_carry_out_are_validation_errors_listing_every_problem(db):
    groups = [
        group("a", "ml.i3en.large"),  # HyperPod's list has it, the catalog does not
        group("a", count=1, MinInstanceCount=2),
        {
            "InstanceGroupName": "flex",
            "InstanceCount": 1,
            "ExecutionRole": ROLE,
            "InstanceRequirements": {"InstanceTypes": ["ml.g5.xlarge"]},
        },
        {"InstanceGroupName": "untyped", "InstanceCount": 1, "ExecutionRole": ROLE},
    ]
    message = _refused(ValidationException, "CreateCluster", ClusterName="bad", InstanceGroups=groups)
    assert message == (
        "Instance group names must be unique; repeated: a. "
        "InstanceGroups.1.InstanceType 'ml.i3en.large' is not a known instance type. "
        "InstanceGroups.2.MinInstanceCount (2) must not be more than InstanceCount (1). "
        "InstanceGroups.3.InstanceRequirements is not supported by Sageport: give InstanceType. "
        "InstanceGroups.4.InstanceType is required."
    )
    assert "InstanceGroups is required" in _refused(ValidationException, "CreateCluster", ClusterName="none")
    assert not Cluster.objects.exists()


def test_an_instance_type_outside_hyperpods_list_is_refused_by_the_shape(db):
    message = _refused(
        ValidationException, "CreateCluster", ClusterName="c", InstanceGroups=[group("g", "ml.p3.2xlarge")]
    )
    assert "ml.p3.2xlarge" in message and "enum" in message.lower()


def test_update_needs_an_in_service_cluster_and_keeps_group_types(db):
    call("CreateCluster", ClusterName="waiting", InstanceGroups=[group()])  # no node: Creating
    assert _refused(
        ConflictException, "UpdateCluster", ClusterName="waiting", InstanceGroups=[group(count=0)]
    ) == ("Cluster 'waiting' is Creating: only an InService cluster can be updated.")
    register_node("gpu-a")
    call("CreateCluster", ClusterName="c", InstanceGroups=[group()])
    message = _refused(
        ValidationException,
        "UpdateCluster",
        ClusterName="c",
        InstanceGroups=[group(instance_type="ml.m5.large")],
        InstanceGroupsToDelete=["nope"],
    )
    assert message == (
        "InstanceGroupsToDelete: the cluster has no instance group 'nope'. "
        "The InstanceType of instance group 'workers' is ml.g5.12xlarge and cannot be changed to "
        "ml.m5.large: "
        "create a new instance group instead."
    )
    assert call("DescribeCluster", ClusterName="c")["InstanceGroups"][0]["InstanceType"] == "ml.g5.12xlarge"


def test_another_account_sees_none_of_the_clusters(db):
    arn = call("CreateCluster", ClusterName="mine", InstanceGroups=[group()])["ClusterArn"]
    for name in ("mine", arn):
        with pytest.raises(ResourceNotFound):
            call("DescribeCluster", ctx=OTHER_ACCOUNT, ClusterName=name)
    assert call("ListClusters", ctx=OTHER_ACCOUNT)["ClusterSummaries"] == []
    with pytest.raises(ResourceNotFound):
        call("DeleteCluster", ctx=OTHER_ACCOUNT, ClusterName="mine")


def test_list_clusters_filters_sorts_and_pages(db):
    for name in ("beta", "alpha", "gamma"):
        call("CreateCluster", ClusterName=name, InstanceGroups=[group()])
    base = timezone.now() - timedelta(hours=1)
    for offset, name in enumerate(("beta", "alpha", "gamma")):
        Cluster.objects.filter(cluster_name=name).update(creation_time=base + timedelta(minutes=offset))

    def names(**params):
        return [s["ClusterName"] for s in call("ListClusters", **params)["ClusterSummaries"]]

    # Oldest first by default: botocore's ListClustersRequest.SortOrder "The default value is Ascending."
    assert names() == ["beta", "alpha", "gamma"]
    assert names(SortBy="NAME", SortOrder="Descending") == ["gamma", "beta", "alpha"]
    assert names(NameContains="AL") == ["alpha"]
    assert names(CreationTimeAfter=base.timestamp(), SortOrder="Descending") == ["gamma", "alpha"]
    assert names(CreationTimeBefore=(base + timedelta(minutes=1)).timestamp()) == ["beta"]
    first = call("ListClusters", SortBy="NAME", MaxResults=2)
    assert [s["ClusterName"] for s in first["ClusterSummaries"]] == ["alpha", "beta"]
    rest = call("ListClusters", SortBy="NAME", MaxResults=2, NextToken=first["NextToken"])
    assert [s["ClusterName"] for s in rest["ClusterSummaries"]] == ["gamma"] and rest.get("NextToken") is None


def test_list_cluster_nodes_filters_by_group_name_and_sorts(db):
    register_node("gpu-a")
    register_node("cpu-a", "ml.m5.large")
    call("CreateCluster", ClusterName="c", InstanceGroups=[group("gpus"), group("cpus", "ml.m5.large")])

    def groups(**params):
        return [
            s["InstanceGroupName"]
            for s in call("ListClusterNodes", ClusterName="c", **params)["ClusterNodeSummaries"]
        ]

    assert groups(SortBy="NAME", SortOrder="Ascending") == ["cpus", "gpus"]
    assert groups(InstanceGroupNameContains="gpu") == ["gpus"]
    assert groups(CreationTimeAfter=timezone.now().timestamp()) == []
