"""Mutations and queries of cluster scheduler configs (SageMaker's "cluster policies": priority
classes and fair-share settings of a HyperPod cluster), scoped to the caller's account and region.

The rules (README "HyperPod clusters"): a config belongs to a cluster of the caller's; a cluster has
at most one that is not Deleted; a change applies within its call (Created, Updated, Deleted: there
is nothing to provision); an update names the version it replaces (TargetVersion) and makes the
next one; a deleted config stays visible, Deleted, until its cluster is deleted."""
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from clusters import requests, services
from clusters.models import (
    ClusterSchedulerConfig,
    ClusterStatus,
    SchedulerConfigRevision,
    SchedulerConfigStatus,
)
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ConflictException, ResourceNotFound, ValidationException
from protocol.listing import filtered_and_sorted

SORT_FIELDS = {"Name": "name", "CreationTime": "creation_time", "Status": "status"}


def configs_of(ctx: RequestContext) -> QuerySet:
    return ClusterSchedulerConfig.objects.filter(account_id=ctx.account_id, region=ctx.region).select_related(
        "cluster"
    )


def create_config(ctx: RequestContext, params: dict) -> ClusterSchedulerConfig:
    # An ARN of another account's or region's cluster finds nothing: ResourceNotFound, as for an
    # unknown one (nothing says whether it exists).
    cluster = services.get_cluster(ctx, params["ClusterArn"])
    if cluster.cluster_status == ClusterStatus.DELETING:
        raise ConflictException(f"Cluster '{cluster.cluster_name}' is Deleting: it takes no cluster policy.")
    if "Slurm" in cluster.request.get("Orchestrator", {}):
        raise ValidationException(
            f"Cluster '{cluster.cluster_name}' is orchestrated by Slurm: cluster policies need an "
            "EKS-orchestrated cluster."
        )
    requests.check_scheduler_config(params["SchedulerConfig"])
    config_id = services.random_id()
    now = timezone.now()
    try:
        with transaction.atomic():
            return ClusterSchedulerConfig.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                cluster=cluster,
                config_id=config_id,
                arn=make_arn(ctx.region, ctx.account_id, "cluster-scheduler-config", config_id),
                name=params["Name"],
                scheduler_config=params["SchedulerConfig"],
                description=params.get("Description"),
                tags=params.get("Tags", []),
                creation_time=now,
                last_modified_time=now,
            )
    except IntegrityError:
        # One live config per cluster is a unique constraint: of two racing creates, one wins.
        existing = _live_config_of(cluster.pk)
        named = f" '{existing.config_id}'" if existing else ""
        raise ConflictException(
            f"Cluster '{cluster.cluster_arn}' already has cluster policy{named}: a cluster has one "
            "cluster policy; update it instead."
        ) from None


def _live_config_of(cluster_pk: int) -> ClusterSchedulerConfig | None:
    rows = ClusterSchedulerConfig.objects.filter(cluster_id=cluster_pk)
    return rows.exclude(status=SchedulerConfigStatus.DELETED).first()


def get_config(ctx: RequestContext, config_id: str) -> ClusterSchedulerConfig:
    found = configs_of(ctx).filter(config_id=config_id).first()
    if found is None:
        raise ResourceNotFound(f"Resource Not Found: Cluster policy '{config_id}' does not exist.")
    return found


def get_revision(config: ClusterSchedulerConfig, version: int) -> SchedulerConfigRevision:
    """A version an update replaced (the current one is the config itself)."""
    found = config.revisions.filter(version=version).first()
    if found is None:
        raise ResourceNotFound(
            f"Resource Not Found: Cluster policy '{config.config_id}' has no version {version}; "
            f"its versions are 1 to {config.version}."
        )
    return found


def update_config(ctx: RequestContext, params: dict) -> ClusterSchedulerConfig:
    """TargetVersion must be the current version: an update made from an older reading is refused
    (ConflictException) rather than silently undoing the one in between."""
    if "SchedulerConfig" in params:
        requests.check_scheduler_config(params["SchedulerConfig"])
    with transaction.atomic():
        config = _live(get_config(ctx, params["ClusterSchedulerConfigId"]))
        target = params["TargetVersion"]
        now = timezone.now()
        # Compare-and-set on the version read: of two updates from the same reading, one wins, and
        # the revision written below is exactly the version replaced.
        rows = ClusterSchedulerConfig.objects.filter(pk=config.pk, version=config.version)
        changed = config.version == target and rows.exclude(status=SchedulerConfigStatus.DELETED).update(
            version=target + 1,
            status=SchedulerConfigStatus.UPDATED,
            scheduler_config=params.get("SchedulerConfig", config.scheduler_config),
            description=params.get("Description", config.description),
            last_modified_time=now,
        )
        if not changed:
            # Read again: a change that raced this one may have moved the version (or deleted it).
            current = _live(get_config(ctx, config.config_id))
            raise ConflictException(
                f"TargetVersion {target} is not the current version ({current.version}) of cluster policy "
                f"'{config.config_id}': describe it and update from the current version."
            )
        SchedulerConfigRevision.objects.create(
            config=config,
            version=config.version,
            scheduler_config=config.scheduler_config,
            description=config.description,
            modified_time=config.last_modified_time,
        )
    config.refresh_from_db()
    return config


def delete_config(ctx: RequestContext, config_id: str) -> ClusterSchedulerConfig:
    config = _live(get_config(ctx, config_id))
    now = timezone.now()
    ClusterSchedulerConfig.objects.filter(pk=config.pk).update(
        status=SchedulerConfigStatus.DELETED, last_modified_time=now
    )
    config.refresh_from_db()
    return config


def _live(config: ClusterSchedulerConfig) -> ClusterSchedulerConfig:
    if config.status == SchedulerConfigStatus.DELETED:
        raise ResourceNotFound(f"Resource Not Found: Cluster policy '{config.config_id}' has been deleted.")
    return config


def list_configs(ctx: RequestContext, params: dict) -> QuerySet:
    """Newest first unless SortBy/SortOrder say otherwise; the time bounds are strict."""
    rows = configs_of(ctx)
    if "CreatedAfter" in params:
        rows = rows.filter(creation_time__gt=params["CreatedAfter"])
    if "CreatedBefore" in params:
        rows = rows.filter(creation_time__lt=params["CreatedBefore"])
    if "ClusterArn" in params:
        rows = rows.filter(cluster__cluster_arn=params["ClusterArn"].lower())
    if "Status" in params:
        rows = rows.filter(status=params["Status"])
    return filtered_and_sorted(rows, params, name_field="name", sort_fields=SORT_FIELDS)
