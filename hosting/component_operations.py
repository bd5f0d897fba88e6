"""The inference component operations and their answers (SageMaker's shapes)."""

from hosting import component_services as services
from hosting.models import ContainerStatus, DeploymentPhase, InferenceComponent
from protocol.context import RequestContext
from protocol.pagination import paginate
from protocol.registry import operation


@operation("CreateInferenceComponent")
def create_inference_component(ctx: RequestContext, params: dict) -> dict:
    return {"InferenceComponentArn": services.create(ctx, params).inference_component_arn}


@operation("DescribeInferenceComponent")
def describe_inference_component(ctx: RequestContext, params: dict) -> dict:
    return describe(services.get(ctx, params["InferenceComponentName"]))


@operation("UpdateInferenceComponent")
def update_inference_component(ctx: RequestContext, params: dict) -> dict:
    return {"InferenceComponentArn": services.update(ctx, params).inference_component_arn}


@operation("UpdateInferenceComponentRuntimeConfig")
def update_inference_component_runtime_config(ctx: RequestContext, params: dict) -> dict:
    return {"InferenceComponentArn": services.update_runtime_config(ctx, params).inference_component_arn}


@operation("DeleteInferenceComponent")
def delete_inference_component(ctx: RequestContext, params: dict) -> dict:
    services.delete(ctx, params["InferenceComponentName"])
    return {}


@operation("ListInferenceComponents")
def list_inference_components(ctx: RequestContext, params: dict) -> dict:
    rows, next_token = paginate(
        services.listing(ctx, params), params.get("NextToken"), params.get("MaxResults")
    )
    return {"InferenceComponents": [summary(row) for row in rows], "NextToken": next_token}


def summary(component: InferenceComponent) -> dict:
    return {
        "InferenceComponentName": component.inference_component_name,
        "InferenceComponentArn": component.inference_component_arn,
        "EndpointName": component.endpoint.endpoint_name,
        "EndpointArn": component.endpoint.endpoint_arn,
        "VariantName": component.variant_name,
        "InferenceComponentStatus": component.runner.endpoint_status,
        "CreationTime": component.creation_time,
        "LastModifiedTime": component.runner.last_modified_time,
    }


def describe(component: InferenceComponent) -> dict:
    runner = component.runner
    specification = {key: value for key, value in component.specification.items() if key != "Container"}
    if "Container" in component.specification:
        container = component.specification["Container"]
        specification["Container"] = {
            "DeployedImage": {"SpecifiedImage": container.get("Image")},
            **{key: container[key] for key in ("ArtifactUrl", "Environment") if key in container},
        }
    return {
        **summary(component),
        "FailureReason": runner.failure_reason or None,
        "Specification": specification,
        "RuntimeConfig": runtime_config(component),
    }


def runtime_config(component: InferenceComponent) -> dict:
    """DesiredCopyCount: the newest fleet's; CurrentCopyCount: copies in service that take traffic."""
    deployments = list(component.runner.deployments.exclude(phase=DeploymentPhase.RETIRING))
    desired = deployments[-1].desired[component.variant_name]["DesiredInstanceCount"] if deployments else 0
    current = sum(
        1
        for deployment in deployments
        if deployment.phase in (DeploymentPhase.ACTIVE, DeploymentPhase.SHIFTING)
        for row in deployment.containers.all()
        if row.status == ContainerStatus.IN_SERVICE
    )
    return {"DesiredCopyCount": desired, "CurrentCopyCount": current}
