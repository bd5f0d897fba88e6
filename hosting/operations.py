"""SageMaker hosting operations: validate (already done by the protocol layer), delegate."""

from hosting import presenters, services
from hosting.models import Endpoint, EndpointConfig, SageMakerModel
from protocol.context import RequestContext
from protocol.pagination import paginate
from protocol.registry import operation


@operation("CreateModel")
def create_model(ctx: RequestContext, params: dict) -> dict:
    return {"ModelArn": services.create_model(ctx, params).model_arn}


@operation("DescribeModel")
def describe_model(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_model(services.get_model(ctx, params["ModelName"]))


@operation("DeleteModel")
def delete_model(ctx: RequestContext, params: dict) -> dict:
    services.delete_model(ctx, params["ModelName"])
    return {}


@operation("ListModels")
def list_models(ctx: RequestContext, params: dict) -> dict:
    sort_fields = {"Name": "model_name", "CreationTime": "creation_time"}
    rows = services.listing(ctx, "ListModels", SageMakerModel, params, sort_fields, "model_name")
    models, next_token = paginate(rows, params.get("NextToken"), params.get("MaxResults"))
    return {"Models": [presenters.model_summary(model) for model in models], "NextToken": next_token}


@operation("CreateEndpointConfig")
def create_endpoint_config(ctx: RequestContext, params: dict) -> dict:
    return {"EndpointConfigArn": services.create_endpoint_config(ctx, params).endpoint_config_arn}


@operation("DescribeEndpointConfig")
def describe_endpoint_config(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_endpoint_config(
        services.get_endpoint_config(ctx, params["EndpointConfigName"])
    )


@operation("DeleteEndpointConfig")
def delete_endpoint_config(ctx: RequestContext, params: dict) -> dict:
    services.delete_endpoint_config(ctx, params["EndpointConfigName"])
    return {}


@operation("ListEndpointConfigs")
def list_endpoint_configs(ctx: RequestContext, params: dict) -> dict:
    sort_fields = {"Name": "endpoint_config_name", "CreationTime": "creation_time"}
    rows = services.listing(
        ctx, "ListEndpointConfigs", EndpointConfig, params, sort_fields, "endpoint_config_name"
    )
    configs, next_token = paginate(rows, params.get("NextToken"), params.get("MaxResults"))
    return {
        "EndpointConfigs": [presenters.endpoint_config_summary(config) for config in configs],
        "NextToken": next_token,
    }


@operation("CreateEndpoint")
def create_endpoint(ctx: RequestContext, params: dict) -> dict:
    return {"EndpointArn": services.create_endpoint(ctx, params).endpoint_arn}


@operation("DescribeEndpoint")
def describe_endpoint(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_endpoint(services.get_endpoint(ctx, params["EndpointName"]))


@operation("UpdateEndpoint")
def update_endpoint(ctx: RequestContext, params: dict) -> dict:
    return {"EndpointArn": services.update_endpoint(ctx, params).endpoint_arn}


@operation("UpdateEndpointWeightsAndCapacities")
def update_endpoint_weights_and_capacities(ctx: RequestContext, params: dict) -> dict:
    return {"EndpointArn": services.update_weights_and_capacities(ctx, params).endpoint_arn}


@operation("DeleteEndpoint")
def delete_endpoint(ctx: RequestContext, params: dict) -> dict:
    services.delete_endpoint(ctx, params["EndpointName"])
    return {}


@operation("ListEndpoints")
def list_endpoints(ctx: RequestContext, params: dict) -> dict:
    sort_fields = {"Name": "endpoint_name", "CreationTime": "creation_time", "Status": "endpoint_status"}
    rows = services.listing(
        ctx, "ListEndpoints", Endpoint, params, sort_fields, "endpoint_name", "endpoint_status"
    ).filter(runs_component__isnull=True)  # an inference component's runner is no endpoint of the user's
    endpoints, next_token = paginate(rows, params.get("NextToken"), params.get("MaxResults"))
    return {
        "Endpoints": [presenters.endpoint_summary(endpoint) for endpoint in endpoints],
        "NextToken": next_token,
    }
