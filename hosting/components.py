"""Inference components: CreateInferenceComponent's rules, and what a component's copies run.

An inference-component endpoint is made from a config whose ProductionVariants name no model
(InstanceType and InitialInstanceCount only; the config's ExecutionRoleArn is the copies' role):
its instances run nothing until components are placed on them. A component's copies are the
serving containers of its *runner*, an endpoint row of its own whose ARN is the component's and
whose deployments snapshot one variant: the parent variant's name and instance type, the
component's model (a model named by ModelName, or one made of its Container) and
ComputeResourceRequirements, and CopyCount as the instance count. The endpoint reconciler runs
the runner like any endpoint (start, /ping, replace, blue/green, drain); the two places where a
copy differs are its placement (hosting/component_placement.py) and its resource limits
(`container_limits`). The requests' rules are hosting/component_requests.py."""

from capacity import instance_types

LOG_GROUP = "/aws/sagemaker/InferenceComponents/{name}"
RESOURCE_TYPE = "inference-component"
# The model key of a component given by Container in its runner's snapshot.
CONTAINER_MODEL = "inference-component-container"


def is_runner_arn(arn: str) -> bool:
    """Whether an endpoint row is a component's runner (its ARN is the component's)."""
    return f":{RESOURCE_TYPE}/" in arn


def log_group(runner_name: str) -> str:
    return LOG_GROUP.format(name=runner_name)


def is_component_config(config_request: dict) -> bool:
    """A config whose variants name no model: its endpoint's instances host components."""
    return all("ModelName" not in variant for variant in config_request["ProductionVariants"])


def config_problems(params: dict) -> list[str]:
    """CreateEndpointConfig's rules for an inference-component endpoint."""
    variants = params["ProductionVariants"]
    without = [variant["VariantName"] for variant in variants if "ModelName" not in variant]
    if not without:
        return []
    if len(without) < len(variants):
        return [
            f"Variants {', '.join(without)} name no model: give every variant a ModelName, or none "
            "(an endpoint for inference components)."
        ]
    if "ExecutionRoleArn" not in params:
        return [
            "ExecutionRoleArn is required for an endpoint configuration without models "
            "(an endpoint for inference components)."
        ]
    return []


def model_container_of(container: dict) -> dict:
    """A component's Container as a CreateModel container: ArtifactUrl is its ModelDataUrl."""
    definition = {"Image": container.get("Image")}
    if "ArtifactUrl" in container:
        definition["ModelDataUrl"] = container["ArtifactUrl"]
    if "Environment" in container:
        definition["Environment"] = container["Environment"]
    return definition


def container_limits(variant: dict, host_cpus: int, host_memory_bytes: int) -> tuple[int, int] | None:
    """(nano_cpus, memory_bytes) of a copy: its reserved cores (the instance's when it names none)
    and MaxMemoryRequiredInMb (else the instance's memory), capped at the host's size. None for a
    container that is not a copy."""
    requirements = variant.get("ComputeResourceRequirements")
    if requirements is None:
        return None
    instance_cpus, instance_memory = instance_types.container_limits(
        variant["InstanceType"], host_cpus, host_memory_bytes
    )
    cores = requirements.get("NumberOfCpuCoresRequired")
    nano_cpus = min(int(cores * 1e9), instance_cpus) if cores else instance_cpus
    maximum = requirements.get("MaxMemoryRequiredInMb")
    memory = min(maximum * 1024 * 1024, instance_memory) if maximum else instance_memory
    return nano_cpus, memory


def runner_variant(specification: dict, variant_name: str, instance_type: str, copies: int) -> dict:
    """The one ProductionVariant of a runner's snapshot."""
    variant = {
        "VariantName": variant_name,
        "ModelName": specification.get("ModelName", CONTAINER_MODEL),
        "InstanceType": instance_type,
        "InitialInstanceCount": copies,
        "InitialVariantWeight": 1.0,
        "ComputeResourceRequirements": specification["ComputeResourceRequirements"],
    }
    variant.update(specification.get("StartupParameters", {}))
    return variant
