"""SageMaker HyperPod cluster operations: validate (already done by the protocol layer), delegate."""
from clusters import presenters, services
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
