"""Response bodies for models, endpoint configs and endpoints, built explicitly from the rows."""

from datetime import UTC, datetime

from hosting import history, serverless
from hosting.containers import runs_containers
from hosting.models import (
    ContainerStatus,
    DeploymentEventKind,
    DeploymentPhase,
    Endpoint,
    EndpointConfig,
    EndpointDeployment,
    EndpointStatus,
    SageMakerModel,
)
from hosting.requests import model_container

PENDING_PHASES = (DeploymentPhase.PROVISIONING, DeploymentPhase.SHIFTING)


def describe_model(model: SageMakerModel) -> dict:
    """With the members SageMaker returns although nobody set them: `EnableNetworkIsolation`
    and each container's `Mode`."""
    body = {"EnableNetworkIsolation": False, **model.request}
    for member in ("PrimaryContainer", "Containers"):
        if member in body:
            body[member] = _with_mode(body[member])
    body.update(ModelArn=model.model_arn, CreationTime=model.creation_time)
    return body


def _with_mode(containers: dict | list) -> dict | list:
    if isinstance(containers, list):
        return [_with_mode(container) for container in containers]
    return {"Mode": "SingleModel", **containers}


def model_summary(model: SageMakerModel) -> dict:
    return {"ModelName": model.model_name, "ModelArn": model.model_arn, "CreationTime": model.creation_time}


def describe_endpoint_config(config: EndpointConfig) -> dict:
    return {
        **config.request,
        "EndpointConfigArn": config.endpoint_config_arn,
        "CreationTime": config.creation_time,
    }


def endpoint_config_summary(config: EndpointConfig) -> dict:
    return {
        "EndpointConfigName": config.endpoint_config_name,
        "EndpointConfigArn": config.endpoint_config_arn,
        "CreationTime": config.creation_time,
    }


def endpoint_summary(endpoint: Endpoint) -> dict:
    return {
        "EndpointName": endpoint.endpoint_name,
        "EndpointArn": endpoint.endpoint_arn,
        "CreationTime": endpoint.creation_time,
        "LastModifiedTime": endpoint.last_modified_time,
        "EndpointStatus": endpoint.endpoint_status,
    }


def describe_endpoint(endpoint: Endpoint) -> dict:
    deployments = list(endpoint.deployments.prefetch_related("containers"))
    active = next((d for d in deployments if d.phase == DeploymentPhase.ACTIVE), None)
    pending = next((d for d in deployments if d.phase in PENDING_PHASES), None)
    updating = endpoint.endpoint_status == EndpointStatus.UPDATING and pending is None
    body = endpoint_summary(endpoint)
    body.update(
        EndpointConfigName=endpoint.endpoint_config_name,
        ProductionVariants=[_variant(active, variant, updating) for variant in _variants(active)] or None,
        FailureReason=endpoint.failure_reason or None,
        LastDeploymentConfig=endpoint.last_deployment_config,
        PendingDeploymentSummary=_pending_summary(pending) if pending else None,
        AsyncInferenceConfig=_async_config(active or pending),
    )
    return body


def _async_config(deployment: EndpointDeployment | None) -> dict | None:
    return deployment.snapshot["EndpointConfig"].get("AsyncInferenceConfig") if deployment else None


def _variants(deployment: EndpointDeployment | None) -> list[dict]:
    return deployment.snapshot["EndpointConfig"]["ProductionVariants"] if deployment else []


def _variant(deployment: EndpointDeployment, variant: dict, updating: bool) -> dict:
    """A ProductionVariantSummary of the active deployment; `updating` while its weights and
    capacities are being changed."""
    name = variant["VariantName"]
    desired = deployment.desired[name]
    current = _in_service(deployment, name)
    changing = updating and current != desired["DesiredInstanceCount"]
    return serverless.summarized(desired, {
        "VariantName": name,
        "DeployedImages": _deployed_images(deployment, variant),
        "CurrentWeight": desired["DesiredWeight"],
        "DesiredWeight": desired["DesiredWeight"],
        "CurrentInstanceCount": current,
        "DesiredInstanceCount": desired["DesiredInstanceCount"],
        "VariantStatus": [{"Status": "Updating", "StartTime": deployment.phase_changed_at}]
        if changing
        else [],
    })


def _pending_summary(deployment: EndpointDeployment) -> dict:
    return {
        "EndpointConfigName": deployment.endpoint_config_name,
        "StartTime": deployment.created_at,
        "ProductionVariants": [_pending_variant(deployment, variant) for variant in _variants(deployment)],
    }


def _pending_variant(deployment: EndpointDeployment, variant: dict) -> dict:
    name = variant["VariantName"]
    desired = deployment.desired[name]
    shifting = deployment.phase == DeploymentPhase.SHIFTING
    return serverless.summarized(desired, {
        "VariantName": name,
        "DeployedImages": _deployed_images(deployment, variant),
        "CurrentWeight": desired["DesiredWeight"] * deployment.traffic_percent / 100 if shifting else 0.0,
        "DesiredWeight": desired["DesiredWeight"],
        "CurrentInstanceCount": _in_service(deployment, name),
        "DesiredInstanceCount": desired["DesiredInstanceCount"],
        "InstanceType": variant.get("InstanceType"),
        "VariantStatus": [_pending_status(deployment)],
    })


def _pending_status(deployment: EndpointDeployment) -> dict:
    """What the rollout does; what it waits for (an engine or S3 unreachable, an image pull), when
    anything, is the StatusMessage."""
    waiting = deployment.status_message or None
    if deployment.phase == DeploymentPhase.PROVISIONING:
        return {"Status": "Creating", "StatusMessage": waiting, "StartTime": deployment.created_at}
    if deployment.traffic_percent < 100:
        return {
            "Status": "ActivatingTraffic",
            "StatusMessage": waiting
            or f"{deployment.traffic_percent:g}% of the traffic goes to the new fleet.",
            "StartTime": deployment.last_shift_at,
        }
    return {
        "Status": "Baking",
        "StatusMessage": waiting
        or "All traffic goes to the new fleet; the old fleet stops after the termination wait.",
        "StartTime": deployment.last_shift_at,
    }


def _in_service(deployment: EndpointDeployment, variant_name: str) -> int:
    if not runs_containers(deployment, variant_name):  # instances for components: capacity, always there
        return deployment.desired[variant_name]["DesiredInstanceCount"]
    return sum(
        1
        for container in deployment.containers.all()
        if container.variant_name == variant_name and container.status == ContainerStatus.IN_SERVICE
    )


def _deployed_images(deployment: EndpointDeployment, variant: dict) -> list[dict]:
    if "ModelName" not in variant:  # an instance for components runs no image of its own
        return []
    image = model_container(deployment.snapshot["Models"][variant["ModelName"]])["Image"]
    resolved = deployment.resolved_images.get(image)
    if resolved is None:
        return [{"SpecifiedImage": image}]
    return [
        {
            "SpecifiedImage": image,
            "ResolvedImage": resolved["ResolvedImage"],
            "ResolutionTime": datetime.fromtimestamp(resolved["ResolutionTime"], UTC),
        }
    ]


# Kinds the console shows as a failure (red) rather than a step (neutral).
FAILED_EVENT_KINDS = frozenset(
    {
        DeploymentEventKind.DEPLOYMENT_FAILED,
        DeploymentEventKind.ROLLED_BACK,
        DeploymentEventKind.CAPACITY_NOT_APPLIED,
        DeploymentEventKind.ENGINE_FAULT,
    }
)


def deployment_history(endpoint: Endpoint, limit: int) -> list[dict]:
    """The endpoint's newest `limit` deployment steps, newest first (no SageMaker operation
    returns them: the console shows them)."""
    return [
        {
            "Time": event.time,
            "Kind": event.kind,
            "EndpointConfigName": event.endpoint_config_name,
            "Message": event.message,
            "Failed": event.kind in FAILED_EVENT_KINDS,
        }
        for event in history.newest_first(endpoint)[:limit]
    ]
