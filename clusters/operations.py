"""SageMaker HyperPod cluster operations, and task governance's (scheduler configs, compute
quotas): validate (already done by the protocol layer), delegate."""
from clusters import policies, policy_kinds, presenters, services
from clusters.policy_kinds import Kind
from protocol.context import RequestContext
from protocol.pagination import paginate
from protocol.registry import operation


@operation("CreateCluster")
def create_cluster(ctx: RequestContext, params: dict) -> dict:
    return {"ClusterArn": services.create_cluster(ctx, params).cluster_arn}


@operation("DescribeCluster")
def describe_cluster(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_cluster(services.get_cluster(ctx, params["ClusterName"]))


@operation("ListClusters")
def list_clusters(ctx: RequestContext, params: dict) -> dict:
    rows = services.list_clusters(ctx, params)
    clusters, next_token = paginate(rows, params.get("NextToken"), params.get("MaxResults"))
    return {"ClusterSummaries": [presenters.cluster_summary(c) for c in clusters], "NextToken": next_token}


@operation("UpdateCluster")
def update_cluster(ctx: RequestContext, params: dict) -> dict:
    return {"ClusterArn": services.update_cluster(ctx, params).cluster_arn}


@operation("DeleteCluster")
def delete_cluster(ctx: RequestContext, params: dict) -> dict:
    return {"ClusterArn": services.delete_cluster(ctx, params["ClusterName"]).cluster_arn}


@operation("ListClusterNodes")
def list_cluster_nodes(ctx: RequestContext, params: dict) -> dict:
    rows = services.list_members(services.get_cluster(ctx, params["ClusterName"]), params)
    members, next_token = paginate(rows, params.get("NextToken"), params.get("MaxResults"))
    include_logical_id = params.get("IncludeNodeLogicalIds", False)
    return {
        "ClusterNodeSummaries": [presenters.node_summary(member, include_logical_id) for member in members],
        "NextToken": next_token,
    }


@operation("DescribeClusterNode")
def describe_cluster_node(ctx: RequestContext, params: dict) -> dict:
    cluster = services.get_cluster(ctx, params["ClusterName"])
    return presenters.node_details(services.get_member(cluster, params))


def _register_policy_operations(kind: Kind) -> None:
    """Create/Describe/List/Update/Delete of a task governance resource, e.g.
    CreateClusterSchedulerConfig or ListComputeQuotas: the same five for both kinds."""
    member = kind.member

    @operation(f"Create{member}")
    def create(ctx: RequestContext, params: dict) -> dict:
        policy = policies.create_policy(ctx, kind, params)
        return {f"{member}Arn": policy.arn, f"{member}Id": policy.policy_id}

    @operation(f"Describe{member}")
    def describe(ctx: RequestContext, params: dict) -> dict:
        policy = policies.get_policy(ctx, kind, params[f"{member}Id"])
        version = params.get(f"{member}Version", policy.version)
        past = None if version == policy.version else policies.get_revision(kind, policy, version)
        return presenters.describe_policy(kind, policy, past)

    @operation(kind.list_operation)
    def list_(ctx: RequestContext, params: dict) -> dict:
        rows = policies.list_policies(ctx, kind, params)
        page, next_token = paginate(rows, params.get("NextToken"), params.get("MaxResults"))
        return {kind.list_member: [presenters.policy_summary(kind, p) for p in page], "NextToken": next_token}

    @operation(f"Update{member}")
    def update(ctx: RequestContext, params: dict) -> dict:
        policy = policies.update_policy(ctx, kind, params)
        return {f"{member}Arn": policy.arn, f"{member}Version": policy.version}

    @operation(f"Delete{member}")
    def delete(ctx: RequestContext, params: dict) -> dict:
        policies.delete_policy(ctx, kind, params[f"{member}Id"])
        return {}


_register_policy_operations(policy_kinds.SCHEDULER_CONFIG)
_register_policy_operations(policy_kinds.COMPUTE_QUOTA)
