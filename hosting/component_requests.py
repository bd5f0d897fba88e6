"""CreateInferenceComponent's and UpdateInferenceComponent's rules that the botocore shapes
cannot express, each a ValidationException saying what to change; members whose behaviour
Sageport does not carry out are refused, never ignored."""

from hosting import components
from hosting.component_placement import Demand, larger_than_an_instance
from hosting.requests import container_problems
from protocol.errors import ValidationException

UNSUPPORTED_SPECIFICATION_MEMBERS = {
    "InstanceType": "endpoints with more than one instance type are not available",
    "BaseInferenceComponentName": "adapter inference components are not available",
    "DataCacheConfig": "the data cache is not available",
    "SchedulingConfig": "scheduling across instances is not available",
}
UNSUPPORTED_REQUEST_MEMBERS = {
    "Specifications": "give one Specification",
    "DeploymentConfig": "updates are blue/green: new copies pass /ping before the old ones are stopped",
}


def _raise_if(problems: list[str]) -> None:
    if problems:
        raise ValidationException(" ".join(problems))


def check_request(params: dict, instance_type: str | None = None) -> None:
    """CreateInferenceComponent's and UpdateInferenceComponent's cross-field rules;
    `instance_type` (the endpoint's variant's) for the size of a copy."""
    problems = [
        f"{member} is not supported by Sageport: {why}."
        for member, why in UNSUPPORTED_REQUEST_MEMBERS.items()
        if member in params
    ]
    if "RuntimeConfig" in params and params["RuntimeConfig"]["CopyCount"] < 1:
        problems.append("RuntimeConfig.CopyCount must be at least 1.")
    specification = params.get("Specification")
    if specification is not None:
        problems += specification_problems(specification, instance_type)
    _raise_if(problems)


def specification_problems(specification: dict, instance_type: str | None) -> list[str]:
    problems = [
        f"Specification.{member} is not supported by Sageport: {why}."
        for member, why in UNSUPPORTED_SPECIFICATION_MEMBERS.items()
        if member in specification
    ]
    given = [member for member in ("ModelName", "Container") if member in specification]
    if len(given) != 1:
        problems.append("Specification needs either ModelName or Container (exactly one).")
    if "Container" in specification:
        problems += _component_container_problems(specification["Container"])
    requirements = specification.get("ComputeResourceRequirements")
    if requirements is None:
        return problems + ["Specification.ComputeResourceRequirements is required."]
    if "AcceleratorPartitionType" in requirements:
        problems.append("AcceleratorPartitionType is not supported by Sageport: GPUs are given whole.")
    maximum = requirements.get("MaxMemoryRequiredInMb")
    if maximum is not None and maximum < requirements["MinMemoryRequiredInMb"]:
        problems.append("MaxMemoryRequiredInMb must be at least MinMemoryRequiredInMb.")
    if instance_type is not None:
        problems += larger_than_an_instance(Demand.of(requirements), instance_type)
    return problems


def _component_container_problems(container: dict) -> list[str]:
    if "ContainerMetricsConfig" in container:
        return ["Container.ContainerMetricsConfig is not supported by Sageport."]
    return container_problems(components.model_container_of(container))
