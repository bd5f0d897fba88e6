"""What an endpoint's serving containers look like to the engine: names, labels, specs, and
where their model data lives on the host.

Names carry the stack id (two installations may share one engine and both number their rows
from 1), the deployment, variant and ordinal, and the node, so a repeated step finds the
container it already started. Labels let the reconciler and the reaper find them."""

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from capacity import gpus, instance_types
from gateway.environment import container_reach
from hosting import components, multi_model, serverless
from hosting.models import Endpoint, EndpointDeployment, ServingContainer
from hosting.requests import model_container
from runtime import labels
from runtime.base import ContainerSpec, Mount, NoSuchImage
from runtime.docker import get_runtime

SERVING_PORT = 8080
MODEL_DIR = "/opt/ml/model"


def stack_labels() -> dict[str, str]:
    return {labels.STACK: settings.SAGEPORT_STACK_ID}


def endpoint_labels(endpoint: Endpoint) -> dict[str, str]:
    return {labels.RESOURCE: endpoint.endpoint_arn, labels.ROLE: labels.SERVING_ROLE, **stack_labels()}


def container_name(deployment: EndpointDeployment, variant_name: str, ordinal: int, node: str) -> str:
    """With its node: the replacement of a container lost with its node may take the same slot,
    and must never be taken for the old container, which that node may still run."""
    return f"sageport-{settings.SAGEPORT_STACK_ID}-serve-{deployment.pk}-{variant_name}-{ordinal}-{node}"


def variant_spec(deployment: EndpointDeployment, variant_name: str) -> dict:
    """The variant's ProductionVariant as the deployment's snapshot has it."""
    variants = deployment.snapshot["EndpointConfig"]["ProductionVariants"]
    return next(variant for variant in variants if variant["VariantName"] == variant_name)


def runs_containers(deployment: EndpointDeployment, variant_name: str) -> bool:
    """False for a variant of an inference-component endpoint (no ModelName): its instances
    are capacity that components' copies share (hosting/components.py), with no container of
    their own."""
    variants = deployment.snapshot.get("EndpointConfig", {}).get("ProductionVariants", ())
    spec = next((variant for variant in variants if variant["VariantName"] == variant_name), None)
    return spec is None or "ModelName" in spec


def container_definition(deployment: EndpointDeployment, variant_name: str) -> dict:
    model_name = variant_spec(deployment, variant_name)["ModelName"]
    return model_container(deployment.snapshot["Models"][model_name])


def execution_role(deployment: EndpointDeployment, variant_name: str) -> str | None:
    """The role the variant's model names (CreateModel's ExecutionRoleArn, optional), which its
    containers' credentials act as."""
    model_name = variant_spec(deployment, variant_name).get("ModelName")
    return deployment.snapshot["Models"][model_name].get("ExecutionRoleArn") if model_name else None


def execution_roles(endpoint: Endpoint) -> set[str]:
    """The roles the containers of the endpoint's fleets act as ("" for a model naming none)."""
    return {
        execution_role(deployment, variant["VariantName"]) or ""
        for deployment in endpoint.deployments.all()
        for variant in deployment.snapshot["EndpointConfig"]["ProductionVariants"]
    }


def startup_timeout_seconds(deployment: EndpointDeployment, variant_name: str) -> float:
    variant = variant_spec(deployment, variant_name)
    return variant.get(
        "ContainerStartupHealthCheckTimeoutInSeconds", settings.SAGEPORT_STARTUP_HEALTH_TIMEOUT_SECONDS
    )


def _limits(variant: dict) -> tuple[int | None, int]:
    """(nano_cpus, memory_bytes): the instance type's, capped at the host's; a serverless
    variant's container gets MemorySizeInMB and no CPU limit (SageMaker names no vCPU count); an
    inference component's copy its ComputeResourceRequirements (hosting/components.py)."""
    if serverless.config(variant) is not None:
        return None, serverless.memory_bytes(variant)
    host = (os.cpu_count() or 1, _host_memory_bytes())
    return components.container_limits(variant, *host) or instance_types.container_limits(
        variant["InstanceType"], *host
    )


def spec_for(
    endpoint: Endpoint, deployment: EndpointDeployment, container: ServingContainer
) -> ContainerSpec:
    """`docker run IMAGE serve` with the model unpacked read-only at /opt/ml/model (a multi-model
    container: its models directory at /opt/ml/models, hosting/multi_model.py), port 8080
    published on its node's address, the GPUs the container's row holds (none: "void"), and what
    the endpoint's containers reach (gateway/: region, endpoints, credentials, the services network)."""
    definition = container_definition(deployment, container.variant_name)
    variant = variant_spec(deployment, container.variant_name)
    nano_cpus, memory_bytes = _limits(variant)
    # Serving containers are never network-isolated (CreateModel refuses EnableNetworkIsolation).
    reach = container_reach(
        isolated=False,
        holder=endpoint.endpoint_arn,
        account_id=endpoint.account_id,
        region=endpoint.region,
        role_arn=execution_role(deployment, container.variant_name),
    )
    environment = {**reach.environment, **definition.get("Environment", {})}
    mount_point = MODEL_DIR
    if multi_model.is_multi_model(definition):  # no model loaded: the data plane loads them
        environment.update(multi_model.ENVIRONMENT)
        mount_point = multi_model.CONTAINER_MODELS_DIR
    # Set last: the model's Environment cannot widen what the container was given.
    environment["NVIDIA_VISIBLE_DEVICES"], gpu_ids = gpus.device_selection(gpus.gpu_ids(container))
    return ContainerSpec(
        name=container.name,
        image=definition["Image"],
        labels={
            **endpoint_labels(endpoint),
            labels.DEPLOYMENT: str(deployment.pk),
            labels.VARIANT: container.variant_name,
            labels.NODE: container.node.name,
        },
        command=["serve"],
        environment=environment,
        mounts=(Mount(str(model_dir(deployment, variant["ModelName"])), mount_point, read_only=True),),
        hostname=definition.get("ContainerHostname"),
        extra_networks=reach.networks,
        nano_cpus=nano_cpus,
        memory_bytes=memory_bytes,
        gpu_device_ids=gpu_ids,
        published_port=SERVING_PORT,
        published_address=container.node.address,
    )


def _host_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def resolve_image(image: str, say: Callable[[str], None]) -> str:
    """The id of the local image, pulled first when it is missing and pulling is allowed; `say`
    is told that a pull runs, then how far it has come (a pull can take minutes)."""
    runtime = get_runtime()
    image_id = runtime.image_id(image)
    if image_id is None and settings.SAGEPORT_PULL_MISSING_IMAGES:
        pulling = f"Pulling the model image {image}"
        say(pulling)
        runtime.pull_image(image, report=lambda progress: say(f"{pulling}: {progress}"))
        image_id = runtime.image_id(image)
    if image_id is None:
        raise NoSuchImage(
            f'Image "{image}" is not present in the local Docker engine and pulling is disabled '
            "(SAGEPORT_PULL_MISSING_IMAGES=false)."
        )
    return image_id


# --- Host directories ------------------------------------------------------------------------


def endpoints_root() -> Path:
    return Path(settings.DATA_DIR) / "endpoints"


def endpoint_dir(endpoint_id: int) -> Path:
    return endpoints_root() / str(endpoint_id)


def deployment_dir(deployment: EndpointDeployment) -> Path:
    return endpoint_dir(deployment.endpoint_id) / str(deployment.pk)


def model_dir(deployment: EndpointDeployment, model_name: str) -> Path:
    return deployment_dir(deployment) / "models" / model_name


def staged_marker(deployment: EndpointDeployment) -> Path:
    """Present once this node has staged every model of the deployment."""
    return deployment_dir(deployment) / "staged"


def remove_deployment_dir(deployment: EndpointDeployment) -> None:
    shutil.rmtree(deployment_dir(deployment), ignore_errors=True)


def remove_endpoint_dir(endpoint_id: int) -> None:
    shutil.rmtree(endpoint_dir(endpoint_id), ignore_errors=True)
