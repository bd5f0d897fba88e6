"""Mutations and queries of HyperPod clusters, scoped to the caller's account and region. A change
records intent (groups, counts, a status) and runs the membership pass at once, so a cluster
whose nodes are registered is InService by the time the call returns."""
import secrets
import string

from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from clusters import membership, requests
from clusters.models import Cluster, ClusterMember, ClusterStatus, InstanceGroup
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ConflictException, ResourceInUse, ResourceNotFound, ValidationException
from protocol.listing import filtered_and_sorted

_ID_ALPHABET = string.ascii_lowercase + string.digits
SORT_FIELDS = {"CREATION_TIME": "creation_time", "NAME": "cluster_name"}
NODE_SORT_FIELDS = {"CREATION_TIME": "creation_time", "NAME": "group__name"}


def clusters_of(ctx: RequestContext) -> QuerySet:
    return Cluster.objects.filter(account_id=ctx.account_id, region=ctx.region)


def create_cluster(ctx: RequestContext, params: dict) -> Cluster:
    requests.check_create(params)
    name = params["ClusterName"]
    now = timezone.now()
    # SageMaker names a cluster by a random 12-character id in its ARN, not by its name.
    cluster_id = random_id()
    try:
        with transaction.atomic():
            cluster = Cluster.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                cluster_name=name,
                cluster_arn=make_arn(ctx.region, ctx.account_id, "cluster", cluster_id),
                request={key: params[key] for key in requests.ECHOED_MEMBERS if key in params},
                tiered_storage=params.get("TieredStorageConfig"),
                tags=params.get("Tags", []),
                creation_time=now,
                provisioning_since=now,
            )
            _add_groups(cluster, params["InstanceGroups"], first_position=0)
    except IntegrityError:
        raise ResourceInUse(
            f"Resource Already Exists: Cluster with name '{name}' already exists. Choose a different name."
        ) from None
    membership.settle(cluster)
    return cluster


def random_id() -> str:
    """12 lower-case letters and digits: the id SageMaker gives clusters and cluster policies."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))


def _add_groups(cluster: Cluster, specs: list[dict], first_position: int) -> None:
    for position, spec in enumerate(specs, start=first_position):
        InstanceGroup.objects.create(
            cluster=cluster,
            name=spec["InstanceGroupName"],
            instance_type=spec["InstanceType"],
            target_count=spec["InstanceCount"],
            min_count=spec.get("MinInstanceCount"),
            spec=spec,
            position=position,
        )


def get_cluster(ctx: RequestContext, name_or_arn: str) -> Cluster:
    if name_or_arn.startswith("arn:"):
        found = clusters_of(ctx).filter(cluster_arn=name_or_arn.lower()).first()
    else:
        found = clusters_of(ctx).filter(cluster_name=name_or_arn).first()
    if found is None:
        raise ResourceNotFound(f"Resource Not Found: Cluster '{name_or_arn}' does not exist.")
    return found


def update_cluster(ctx: RequestContext, params: dict) -> Cluster:
    with transaction.atomic():
        cluster = get_cluster(ctx, params["ClusterName"])
        if cluster.cluster_status != ClusterStatus.IN_SERVICE:
            raise ConflictException(
                f"Cluster '{cluster.cluster_name}' is {cluster.cluster_status}: only an InService cluster "
                "can be updated."
            )
        groups = {group.name: group for group in cluster.instance_groups.all()}
        requests.check_update(params, {name: group.instance_type for name, group in groups.items()})
        doomed = params.get("InstanceGroupsToDelete", [])
        InstanceGroup.objects.filter(cluster=cluster, name__in=doomed).delete()
        specs = params.get("InstanceGroups", [])
        for spec in specs:
            if spec["InstanceGroupName"] in groups:
                _update_group(groups[spec["InstanceGroupName"]], spec)
        next_position = 1 + max((group.position for group in groups.values()), default=-1)
        new_specs = [spec for spec in specs if spec["InstanceGroupName"] not in groups]
        _add_groups(cluster, new_specs, next_position)
        for key in requests.ECHOED_MEMBERS:
            if key in params:
                cluster.request[key] = params[key]
        if "TieredStorageConfig" in params:
            cluster.tiered_storage = params["TieredStorageConfig"]
        if _any_short(cluster, {spec["InstanceGroupName"] for spec in specs}):
            cluster.cluster_status = ClusterStatus.UPDATING
            cluster.provisioning_since = timezone.now()
        cluster.save(update_fields=["request", "tiered_storage", "cluster_status", "provisioning_since"])
    membership.settle(cluster)
    return cluster


def _update_group(group: InstanceGroup, spec: dict) -> None:
    group.target_count = spec["InstanceCount"]
    group.min_count = spec.get("MinInstanceCount", group.min_count)
    group.spec = {**spec, "InstanceType": group.instance_type}
    group.save(update_fields=["target_count", "min_count", "spec"])


def _any_short(cluster: Cluster, named: set[str]) -> bool:
    """Whether a group the update named now wants more nodes than it holds: only such an update
    has an Updating phase (a tier change alone, or one leaving a partly filled group as it was,
    applies at once)."""
    groups = cluster.instance_groups.filter(name__in=named)
    return any(group.members.count() < group.target_count for group in groups)


def delete_cluster(ctx: RequestContext, name_or_arn: str) -> Cluster:
    """→ Deleting; the next membership pass removes the cluster and frees its nodes. Deleting a
    cluster already being deleted is accepted again."""
    cluster = get_cluster(ctx, name_or_arn)
    Cluster.objects.filter(pk=cluster.pk).update(cluster_status=ClusterStatus.DELETING)
    return cluster


def list_clusters(ctx: RequestContext, params: dict) -> QuerySet:
    if "TrainingPlanArn" in params:
        return clusters_of(ctx).none()  # Sageport has no training plans
    return filtered_and_sorted(
        clusters_of(ctx), params, operation="ListClusters", name_field="cluster_name", sort_fields=SORT_FIELDS
    )


def list_members(cluster: Cluster, params: dict) -> QuerySet:
    """ListClusterNodes' rows: members by launch time (their creation time) or group name."""
    rows = ClusterMember.objects.filter(group__cluster=cluster).select_related("group", "node")
    rows = rows.annotate(creation_time=F("launch_time"))
    if "InstanceGroupNameContains" in params:
        rows = rows.filter(group__name__icontains=params["InstanceGroupNameContains"])
    return filtered_and_sorted(
        rows, params, operation="ListClusterNodes", name_field="group__name", sort_fields=NODE_SORT_FIELDS
    )


def get_member(cluster: Cluster, params: dict) -> ClusterMember:
    """By NodeId or NodeLogicalId (Sageport's logical id is the instance id), not both."""
    given = [params[key] for key in ("NodeId", "NodeLogicalId") if key in params]
    if len(given) != 1:
        raise ValidationException("Specify either NodeId or NodeLogicalId, but not both.")
    member = ClusterMember.objects.filter(group__cluster=cluster, instance_id=given[0]).select_related(
        "group", "node"
    ).first()
    if member is None:
        raise ResourceNotFound(
            f"Resource Not Found: Node '{given[0]}' is not part of cluster '{cluster.cluster_name}'."
        )
    return member
