"""Response bodies of the cluster operations, built explicitly from the rows (botocore's output
shapes: DescribeClusterResponse, ClusterSummary, ClusterNodeSummary, ClusterNodeDetails,
Describe/ClusterSchedulerConfig and ComputeQuota responses and summaries)."""
import ipaddress
from datetime import datetime

from django.utils import timezone

from capacity import nodes
from clusters import membership
from clusters.models import (
    Cluster,
    ClusterMember,
    ClusterPolicy,
    ClusterStatus,
    InstanceGroup,
    PolicyRevision,
)
from clusters.policy_kinds import Kind

# Members of a group's specification echoed unchanged (their input and output shapes agree).
_ECHOED_GROUP_MEMBERS = (
    "LifeCycleConfig", "ExecutionRole", "ThreadsPerCore", "InstanceStorageConfigs", "OnStartDeepHealthChecks",
    "TrainingPlanArn", "OverrideVpcConfig", "ScheduledUpdateConfig", "SlurmConfig", "CapacityRequirements",
    "NetworkInterface",
)
# Members of a node's group shown in DescribeClusterNode.
_NODE_GROUP_MEMBERS = ("LifeCycleConfig", "OverrideVpcConfig", "ThreadsPerCore", "InstanceStorageConfigs")


def describe_cluster(cluster: Cluster) -> dict:
    now = timezone.now()
    body = {
        "ClusterArn": cluster.cluster_arn,
        "ClusterName": cluster.cluster_name,
        "ClusterStatus": cluster.cluster_status,
        "CreationTime": cluster.creation_time,
        "FailureMessage": cluster.failure_message or None,
        "InstanceGroups": [_group(cluster, group, now) for group in cluster.instance_groups.all()],
        "TieredStorageConfig": cluster.tiered_storage,
    }
    for key, value in cluster.request.items():
        body[key] = _auto_scaling(value) if key == "AutoScaling" else value
    return body


def _auto_scaling(config: dict) -> dict:
    """Sageport does not scale clusters: an enabled autoscaler shows as Failed, saying so."""
    if config["Mode"] == "Enable":
        return {**config, "Status": "Failed", "FailureMessage": "Sageport does not autoscale clusters."}
    return {**config, "Status": "InService"}


def _group(cluster: Cluster, group: InstanceGroup, now: datetime) -> dict:
    members = list(group.members.select_related("node"))
    body = {
        "CurrentCount": len(members),
        "TargetCount": group.target_count,
        "MinCount": group.min_count,
        "InstanceGroupName": group.name,
        "InstanceType": group.instance_type,
        "Status": _group_status(cluster, group, members, now),
        **{key: group.spec[key] for key in _ECHOED_GROUP_MEMBERS if key in group.spec},
    }
    if "KubernetesConfig" in group.spec:
        config = group.spec["KubernetesConfig"]
        body["KubernetesConfig"] = {
            "CurrentLabels": config.get("Labels"), "DesiredLabels": config.get("Labels"),
            "CurrentTaints": config.get("Taints"), "DesiredTaints": config.get("Taints"),
        }
    for member in ("ImageId", "ImageReleaseVersion"):
        if member in group.spec:
            body[f"Current{member}"] = body[f"Desired{member}"] = group.spec[member]
    return body


def _group_status(cluster: Cluster, group: InstanceGroup, members: list[ClusterMember], now: datetime) -> str:
    status = cluster.cluster_status
    if status in (ClusterStatus.DELETING, ClusterStatus.FAILED):
        return status
    if status == ClusterStatus.CREATING and len(members) < membership.needed(group, cluster):
        return "Creating"
    if status == ClusterStatus.UPDATING and len(members) < group.target_count:
        return "Updating"
    if any(not nodes.is_live(member.node, now) for member in members):
        return "Degraded"
    return "InService"


def cluster_summary(cluster: Cluster) -> dict:
    return {
        "ClusterArn": cluster.cluster_arn,
        "ClusterName": cluster.cluster_name,
        "CreationTime": cluster.creation_time,
        "ClusterStatus": cluster.cluster_status,
    }


def node_summary(member: ClusterMember, include_logical_id: bool = False) -> dict:
    return {
        "InstanceGroupName": member.group.name,
        "InstanceId": member.instance_id,
        "NodeLogicalId": member.instance_id if include_logical_id else None,
        "InstanceType": member.group.instance_type,
        "LaunchTime": member.launch_time,
        "InstanceStatus": instance_status(member, timezone.now()),
    }


def node_details(member: ClusterMember) -> dict:
    details = {
        **node_summary(member, include_logical_id=True),
        **{key: member.group.spec[key] for key in _NODE_GROUP_MEMBERS if key in member.group.spec},
    }
    if _is_ipv4(member.node.address):
        details["PrivatePrimaryIp"] = member.node.address
    return {"NodeDetails": details}


def instance_status(member: ClusterMember, now: datetime) -> dict:
    """From the node's heartbeats: Running while live, Failure (with the reason) once silent."""
    node = member.node
    if member.group.cluster.cluster_status == ClusterStatus.DELETING:
        return {"Status": "ShuttingDown", "Message": "The cluster is being deleted."}
    if nodes.is_live(node, now):
        return {"Status": "Running"}
    since = node.heartbeat_at.isoformat(timespec="seconds")
    message = f"Node {node.name} has sent no heartbeat since {since}: its worker is down or unreachable."
    return {"Status": "Failure", "Message": message}


def _is_ipv4(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).version == 4
    except ValueError:
        return False


def describe_policy(kind: Kind, policy: ClusterPolicy, past: PolicyRevision | None = None) -> dict:
    """The policy as it is, or as it was at the `past` version an update replaced."""
    shown = past or policy
    return {
        **policy_summary(kind, policy),
        f"{kind.member}Version": past.version if past else policy.version,
        **shown.spec,
        "Description": shown.description,
        "LastModifiedTime": past.modified_time if past else policy.last_modified_time,
    }


def policy_summary(kind: Kind, policy: ClusterPolicy) -> dict:
    return {
        f"{kind.member}Arn": policy.arn,
        f"{kind.member}Id": policy.policy_id,
        f"{kind.member}Version": policy.version,
        "Name": policy.name,
        "CreationTime": policy.creation_time,
        "LastModifiedTime": policy.last_modified_time,
        "Status": policy.status,
        "ClusterArn": policy.cluster.cluster_arn,
        **(policy.spec if kind.summary_has_spec else {}),
    }
