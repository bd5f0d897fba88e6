"""Calling the cluster operations as a signed request would (shape validation included), and
registered nodes to fill clusters with."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from capacity.models import Node
from protocol import registry
from protocol.context import RequestContext
from protocol.validation import validate_input

CTX = RequestContext(account_id="123456789012", region="us-east-1", access_key_id="AKIDTEST")
OTHER_ACCOUNT = RequestContext(account_id="210987654321", region="us-east-1", access_key_id="AKIDOTHER")
OTHER_REGION = RequestContext(account_id=CTX.account_id, region="eu-west-1", access_key_id="AKIDTEST")
ROLE = "arn:aws:iam::123456789012:role/HyperPodRole"


def call(operation: str, ctx: RequestContext = CTX, **params) -> dict:
    handler = registry.handler_for("SageMaker", operation)
    return handler(ctx, validate_input("sagemaker", operation, params))


def refused(error: type[Exception], operation: str, ctx: RequestContext = CTX, **params) -> str:
    """The message of the `error` that calling `operation` raises."""
    with pytest.raises(error) as raised:
        call(operation, ctx, **params)
    return raised.value.message


def group(name: str = "workers", instance_type: str = "ml.g5.12xlarge", count: int = 1, **extra) -> dict:
    return {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "InstanceCount": count,
        "ExecutionRole": ROLE,
        **extra,
    }


def register_node(name: str, instance_type: str = "ml.g5.12xlarge", *, lost: bool = False) -> Node:
    now = timezone.now()
    beat = now - timedelta(seconds=settings.SAGEPORT_NODE_LOST_AFTER_SECONDS + 5) if lost else now
    return Node.objects.create(
        name=name,
        cpus=48,
        memory_bytes=192 << 30,
        registered_at=now,
        heartbeat_at=beat,
        lost_at=beat if lost else None,
        instance_type=instance_type,
    )


def silence(node: Node) -> None:
    """The node's worker stopped beating long enough ago to count as lost."""
    Node.objects.filter(pk=node.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.SAGEPORT_NODE_LOST_AFTER_SECONDS + 5)
    )


def member_names(cluster_name: str) -> dict[str, list[str]]:
    """Group name → its nodes' names, in join order, as ListClusterNodes and the rows say."""
    from clusters.models import ClusterMember

    rows = ClusterMember.objects.filter(group__cluster__cluster_name=cluster_name)
    rows = rows.order_by("launch_time", "pk")
    found: dict[str, list[str]] = {}
    for member in rows.select_related("group", "node"):
        found.setdefault(member.group.name, []).append(member.node.name)
    return found
