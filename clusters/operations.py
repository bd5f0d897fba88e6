"""SageMaker HyperPod cluster operations, and their cluster policies (scheduler configs): validate
(already done by the protocol layer), delegate."""
from clusters import presenters, scheduler_configs, services
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


@operation("CreateClusterSchedulerConfig")
def create_cluster_scheduler_config(ctx: RequestContext, params: dict) -> dict:
    config = scheduler_configs.create_config(ctx, params)
    return {"ClusterSchedulerConfigArn": config.arn, "ClusterSchedulerConfigId": config.config_id}


@operation("DescribeClusterSchedulerConfig")
def describe_cluster_scheduler_config(ctx: RequestContext, params: dict) -> dict:
    config = scheduler_configs.get_config(ctx, params["ClusterSchedulerConfigId"])
    version = params.get("ClusterSchedulerConfigVersion", config.version)
    past = None if version == config.version else scheduler_configs.get_revision(config, version)
    return presenters.describe_scheduler_config(config, past)


@operation("ListClusterSchedulerConfigs")
def list_cluster_scheduler_configs(ctx: RequestContext, params: dict) -> dict:
    rows = scheduler_configs.list_configs(ctx, params)
    configs, next_token = paginate(rows, params.get("NextToken"), params.get("MaxResults"))
    return {
        "ClusterSchedulerConfigSummaries": [presenters.scheduler_config_summary(c) for c in configs],
        "NextToken": next_token,
    }


@operation("UpdateClusterSchedulerConfig")
def update_cluster_scheduler_config(ctx: RequestContext, params: dict) -> dict:
    config = scheduler_configs.update_config(ctx, params)
    return {"ClusterSchedulerConfigArn": config.arn, "ClusterSchedulerConfigVersion": config.version}


@operation("DeleteClusterSchedulerConfig")
def delete_cluster_scheduler_config(ctx: RequestContext, params: dict) -> dict:
    scheduler_configs.delete_config(ctx, params["ClusterSchedulerConfigId"])
    return {}
