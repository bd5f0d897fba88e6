"""Mutations and queries of task governance's resources: scheduler configs (SageMaker's "cluster
policies": priority classes, fair share) and compute quotas (a team's share of a cluster), scoped
to the caller's account and region. `kind` (clusters/policy_kinds.py) says which.

The rules (docs/hyperpod.md, "HyperPod clusters"): a policy belongs to a cluster of the caller's that is not
Slurm-orchestrated; a cluster has at most one live scheduler config, and one live compute quota per
team; a change applies within its call (Created, Updated, Deleted: there is nothing to
provision); an update names the version it replaces (TargetVersion) and makes the next one; a
deleted policy stays visible, Deleted, until its cluster is deleted (the rows go with it)."""
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from clusters import services
from clusters.models import Cluster, ClusterPolicy, ClusterStatus, PolicyRevision, PolicyStatus
from clusters.policy_kinds import Kind
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ConflictException, ResourceNotFound, ValidationException
from protocol.listing import filtered_and_sorted


def policies_of(ctx: RequestContext, kind: Kind) -> QuerySet:
    rows = ClusterPolicy.objects.filter(kind=kind.value, account_id=ctx.account_id, region=ctx.region)
    return rows.select_related("cluster")


def create_policy(ctx: RequestContext, kind: Kind, params: dict) -> ClusterPolicy:
    # An ARN of another account's or region's cluster finds nothing: ResourceNotFound, as for an
    # unknown one (nothing says whether it exists).
    cluster = services.get_cluster(ctx, params["ClusterArn"])
    _check_cluster(cluster, kind)
    spec = {**kind.defaults, **{member: params[member] for member in kind.spec_members if member in params}}
    kind.check(spec, _instance_types(cluster))
    policy_id = services.random_id()
    now = timezone.now()
    try:
        with transaction.atomic():
            return ClusterPolicy.objects.create(
                kind=kind.value,
                account_id=ctx.account_id,
                region=ctx.region,
                cluster=cluster,
                policy_id=policy_id,
                arn=make_arn(ctx.region, ctx.account_id, kind.value, policy_id),
                name=params["Name"],
                spec=spec,
                description=params.get("Description"),
                scope=kind.scope(spec),
                tags=params.get("Tags", []),
                creation_time=now,
                last_modified_time=now,
            )
    except IntegrityError:
        raise _taken(kind, cluster, kind.scope(spec)) from None


def _check_cluster(cluster: Cluster, kind: Kind) -> None:
    if cluster.cluster_status == ClusterStatus.DELETING:
        raise ConflictException(f"Cluster '{cluster.cluster_name}' is Deleting: it takes no {kind.noun}.")
    if "Slurm" in cluster.request.get("Orchestrator", {}):
        raise ValidationException(
            f"Cluster '{cluster.cluster_name}' is orchestrated by Slurm: task governance ({kind.noun}) needs "
            "an EKS-orchestrated cluster."
        )


def _instance_types(cluster: Cluster) -> set[str]:
    return set(cluster.instance_groups.values_list("instance_type", flat=True))


def _taken(kind: Kind, cluster: Cluster, scope: str) -> ConflictException:
    """The live policy per scope is a unique constraint: of two racing creates (or an update moving
    a quota to a team that has one), one wins; the other gets this."""
    rows = ClusterPolicy.objects.filter(cluster=cluster, kind=kind.value, scope=scope)
    existing = rows.exclude(status=PolicyStatus.DELETED).first()
    named = f" '{existing.policy_id}'" if existing else ""
    return ConflictException(kind.conflict(cluster.cluster_arn, scope, named))


def get_policy(ctx: RequestContext, kind: Kind, policy_id: str) -> ClusterPolicy:
    found = policies_of(ctx, kind).filter(policy_id=policy_id).first()
    if found is None:
        raise ResourceNotFound(f"Resource Not Found: {kind.noun.capitalize()} '{policy_id}' does not exist.")
    return found


def get_revision(kind: Kind, policy: ClusterPolicy, version: int) -> PolicyRevision:
    """A version an update replaced (the current one is the policy itself)."""
    found = policy.revisions.filter(version=version).first()
    if found is None:
        raise ResourceNotFound(
            f"Resource Not Found: {kind.noun.capitalize()} '{policy.policy_id}' has no version {version}; "
            f"its versions are 1 to {policy.version}."
        )
    return found


def update_policy(ctx: RequestContext, kind: Kind, params: dict) -> ClusterPolicy:
    """TargetVersion must be the current version: an update made from an older reading is refused
    (ConflictException) rather than silently undoing the one in between. Members left out keep
    their values."""
    policy_id = params[f"{kind.member}Id"]
    with transaction.atomic():
        policy = _live(kind, get_policy(ctx, kind, policy_id))
        spec = {**policy.spec, **{member: params[member] for member in kind.spec_members if member in params}}
        kind.check(spec, _instance_types(policy.cluster))
        target = params["TargetVersion"]
        try:
            changed = policy.version == target and _advance(policy, spec, kind.scope(spec), params)
        except IntegrityError:
            raise _taken(kind, policy.cluster, kind.scope(spec)) from None
        if not changed:
            # Read again: a change that raced this one may have moved the version (or deleted it).
            current = _live(kind, get_policy(ctx, kind, policy_id))
            raise ConflictException(
                f"TargetVersion {target} is not the current version ({current.version}) of {kind.noun} "
                f"'{policy_id}': describe it and update from the current version."
            )
        PolicyRevision.objects.create(
            policy=policy,
            version=policy.version,
            spec=policy.spec,
            description=policy.description,
            modified_time=policy.last_modified_time,
        )
    policy.refresh_from_db()
    return policy


def _advance(policy: ClusterPolicy, spec: dict, scope: str, params: dict) -> bool:
    """Compare-and-set on the version read: of two updates from the same reading, one wins, and the
    revision kept is exactly the version replaced."""
    rows = ClusterPolicy.objects.filter(pk=policy.pk, version=policy.version)
    rows = rows.exclude(status=PolicyStatus.DELETED)
    with transaction.atomic():  # a savepoint: a scope taken by another quota leaves the update undone
        return bool(
            rows.update(
                version=policy.version + 1,
                status=PolicyStatus.UPDATED,
                spec=spec,
                scope=scope,
                description=params.get("Description", policy.description),
                last_modified_time=timezone.now(),
            )
        )


def delete_policy(ctx: RequestContext, kind: Kind, policy_id: str) -> ClusterPolicy:
    policy = _live(kind, get_policy(ctx, kind, policy_id))
    rows = ClusterPolicy.objects.filter(pk=policy.pk)
    rows.update(status=PolicyStatus.DELETED, last_modified_time=timezone.now())
    policy.refresh_from_db()
    return policy


def _live(kind: Kind, policy: ClusterPolicy) -> ClusterPolicy:
    if policy.status == PolicyStatus.DELETED:
        raise ResourceNotFound(
            f"Resource Not Found: {kind.noun.capitalize()} '{policy.policy_id}' has been deleted."
        )
    return policy


def list_policies(ctx: RequestContext, kind: Kind, params: dict) -> QuerySet:
    """Ordered by SortBy/SortOrder or their documented defaults (newest first); the time bounds
    are strict."""
    rows = policies_of(ctx, kind)
    if "CreatedAfter" in params:
        rows = rows.filter(creation_time__gt=params["CreatedAfter"])
    if "CreatedBefore" in params:
        rows = rows.filter(creation_time__lt=params["CreatedBefore"])
    if "ClusterArn" in params:
        rows = rows.filter(cluster__cluster_arn=params["ClusterArn"].lower())
    if "Status" in params:
        rows = rows.filter(status=params["Status"])
    return filtered_and_sorted(
        rows, params, operation=kind.list_operation, name_field="name", sort_fields=kind.sort_fields
    )
