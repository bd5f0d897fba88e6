"""Checks on hosting requests that the botocore shapes cannot express.

The shape validation (types, lengths, patterns, enums) has already run; these are cross-field
rules and the limits of what Sageport runs, each a ValidationException whose text says what to
change. Members that would change behaviour Sageport does not carry out are refused, never
silently ignored."""

from capacity import instance_types
from hosting import async_config, components, multi_model, serverless
from protocol.errors import ValidationException

DEFAULT_VARIANT_WEIGHT = 1.0

UNSUPPORTED_MODEL_MEMBERS = {
    "VpcConfig": "VPC placement has no meaning on a Docker host",
    "EnableNetworkIsolation": "serving containers need the network to receive requests",
}
UNSUPPORTED_CONTAINER_MEMBERS = {
    "InferenceSpecificationName": "give Image (and ModelDataUrl) instead of an inference specification",
    "AdditionalModelDataSources": "only one model data source is unpacked, at /opt/ml/model",
    "MultiModelConfig": "it applies to a container of Mode MultiModel only",
}
UNSUPPORTED_CONFIG_MEMBERS = {
    "DataCaptureConfig": "data capture is not available yet",
    "ExplainerConfig": "online explainability is not available",
    "ShadowProductionVariants": "shadow variants are not available yet",
    "VpcConfig": "VPC placement has no meaning on a Docker host",
    "EnableNetworkIsolation": "serving containers need the network to receive requests",
}
UNSUPPORTED_VARIANT_MEMBERS = {
    "InstancePools": "instance pools are not available: give InstanceType",
    "AcceleratorType": "Elastic Inference is retired: use a GPU instance type",
    "ManagedInstanceScaling": "managed instance scaling is not available",
    "CoreDumpConfig": "core dumps are not collected",
}
UNSUPPORTED_DEPLOYMENT_MEMBERS = {
    "RollingUpdatePolicy": "only BlueGreenUpdatePolicy is supported",
    "AutoRollbackConfiguration": "CloudWatch alarms are not available",
}


def _raise_if(problems: list[str]) -> None:
    if problems:
        raise ValidationException(" ".join(problems))


def _unsupported(members: dict[str, str], params: dict, where: str = "") -> list[str]:
    return [
        f"{where}{member} is not supported by Sageport: {why}."
        for member, why in members.items()
        if member in params and not (member == "EnableNetworkIsolation" and params[member] is False)
    ]


# --- CreateModel -----------------------------------------------------------------------------


def check_create_model(params: dict) -> None:
    problems = _unsupported(UNSUPPORTED_MODEL_MEMBERS, params)
    containers = params.get("Containers")
    primary = params.get("PrimaryContainer")
    if primary is not None and containers is not None:
        problems.append("Give either PrimaryContainer or Containers, not both.")
    elif primary is None and not containers:
        problems.append("PrimaryContainer is required.")
    elif containers is not None and len(containers) > 1:
        problems.append(
            "Containers with more than one container (inference pipelines) is not supported by Sageport."
        )
    else:
        problems += container_problems(primary if primary is not None else containers[0])
    _raise_if(problems)


def container_problems(container: dict) -> list[str]:
    if multi_model.is_multi_model(container):
        unsupported = {k: v for k, v in UNSUPPORTED_CONTAINER_MEMBERS.items() if k != "MultiModelConfig"}
        return _unsupported(unsupported, container, "Container ") + multi_model.container_problems(container)
    problems = _unsupported(UNSUPPORTED_CONTAINER_MEMBERS, container, "Container ")
    if "ModelPackageName" in container:
        return problems + _package_reference_problems(container)
    if not container.get("Image"):
        problems.append("The container's Image is required.")
    url = container.get("ModelDataUrl")
    source = container.get("ModelDataSource", {}).get("S3DataSource")
    if url is not None and source is not None:
        problems.append("Give either ModelDataUrl or ModelDataSource, not both.")
    if url is not None and not (url.startswith("s3://") and url.endswith(".tar.gz")):
        problems.append(f"ModelDataUrl must be an s3:// URI of a .tar.gz file, got '{url}'.")
    if source is not None:
        problems += _model_data_source_problems(source)
    return problems


# What a model package's InferenceSpecification gives a container that names the package.
PACKAGE_MEMBERS = ("Image", "ModelDataUrl", "ModelDataSource")


def _package_reference_problems(container: dict) -> list[str]:
    """A container naming a model package takes its image and model data from the package."""
    given = [member for member in PACKAGE_MEMBERS if member in container]
    return [
        f"Container {member} cannot be given with ModelPackageName: the model package gives it."
        for member in given
    ]


def check_package_container(container: dict) -> None:
    """The container a model package resolved to, held to the rules of one given directly."""
    direct = {key: value for key, value in container.items() if key != "ModelPackageName"}
    _raise_if(container_problems(direct))


def _model_data_source_problems(source: dict) -> list[str]:
    uri, data_type, compression = source["S3Uri"], source["S3DataType"], source["CompressionType"]
    if not uri.startswith("s3://"):
        return [f"ModelDataSource.S3DataSource.S3Uri must be an s3:// URI, got '{uri}'."]
    if data_type == "S3Prefix" and compression != "None":
        return ["ModelDataSource.S3DataSource with S3DataType S3Prefix needs CompressionType None."]
    if data_type == "S3Prefix" and not uri.endswith("/"):
        return [f"ModelDataSource.S3DataSource.S3Uri of an S3Prefix must end with '/', got '{uri}'."]
    if data_type == "S3Object" and compression == "Gzip" and not uri.endswith(".tar.gz"):
        return [f"A Gzip ModelDataSource must point to a .tar.gz file, got '{uri}'."]
    return []


def model_container(model_request: dict) -> dict:
    """The one container definition of a stored CreateModel request."""
    return model_request.get("PrimaryContainer") or model_request["Containers"][0]


# --- CreateEndpointConfig --------------------------------------------------------------------


def check_create_endpoint_config(params: dict) -> None:
    problems = _unsupported(UNSUPPORTED_CONFIG_MEMBERS, params)
    names = [variant["VariantName"].lower() for variant in params["ProductionVariants"]]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"Variant names must be unique; repeated: {', '.join(repeated)}.")
    for variant in params["ProductionVariants"]:
        problems += _variant_problems(variant)
    problems += components.config_problems(params)
    if "AsyncInferenceConfig" in params:
        problems += async_config.problems(params["AsyncInferenceConfig"])
    problems += serverless.config_problems(params)
    _raise_if(problems)


def _variant_problems(variant: dict) -> list[str]:
    where = f"Variant '{variant['VariantName']}': "
    problems = _unsupported(UNSUPPORTED_VARIANT_MEMBERS, variant, where)
    instance_members = serverless.INSTANCE_MEMBERS if serverless.instance_members_required(variant) else ()
    # A variant may name no model (an endpoint for inference components: components.config_problems),
    # unless it is serverless.
    required = (*(("ModelName",) if "ServerlessConfig" in variant else ()), *instance_members)
    for member in required:
        if member not in variant:
            problems.append(f"{where}{member} is required.")
    if "InstanceType" in variant:
        problems += instance_types.unknown_type_problems(variant["InstanceType"], where)
    return problems


def config_with_defaults(params: dict) -> dict:
    """The request as DescribeEndpointConfig shows it: the documented defaults filled in."""
    stored = {key: value for key, value in params.items() if key != "Tags"}
    for variant in stored["ProductionVariants"]:
        variant.setdefault("InitialVariantWeight", DEFAULT_VARIANT_WEIGHT)
    stored.setdefault("EnableNetworkIsolation", False)
    return stored


# --- DeploymentConfig (CreateEndpoint, UpdateEndpoint) ---------------------------------------


def check_deployment_config(config: dict | None) -> None:
    if config is None:
        return
    problems = _unsupported(UNSUPPORTED_DEPLOYMENT_MEMBERS, config, "DeploymentConfig.")
    policy = config.get("BlueGreenUpdatePolicy")
    if policy is None and not problems:
        problems.append("DeploymentConfig needs a BlueGreenUpdatePolicy.")
    if policy is not None:
        problems += _routing_problems(policy["TrafficRoutingConfiguration"])
    _raise_if(problems)


def _routing_problems(routing: dict) -> list[str]:
    kind = routing["Type"]
    size_member = {"CANARY": "CanarySize", "LINEAR": "LinearStepSize"}.get(kind)
    problems = [
        f"TrafficRoutingConfiguration {member} applies only to Type {applies}, not {kind}."
        for member, applies in (("CanarySize", "CANARY"), ("LinearStepSize", "LINEAR"))
        if member in routing and member != size_member
    ]
    if size_member is None:
        return problems
    size = routing.get(size_member)
    if size is None:
        problems.append(f"TrafficRoutingConfiguration Type {kind} requires {size_member}.")
    elif size["Type"] == "CAPACITY_PERCENT" and size["Value"] > 100:
        problems.append(f"{size_member} of Type CAPACITY_PERCENT must be at most 100, got {size['Value']}.")
    return problems


# --- UpdateEndpointWeightsAndCapacities ------------------------------------------------------


def check_weights_and_capacities(changes: list[dict], desired: dict, endpoint_name: str) -> None:
    """`desired`: the active deployment's desired entries by variant name."""
    problems = []
    seen: set[str] = set()
    for change in changes:
        name = change["VariantName"]
        where = f"Variant '{name}': "
        if name not in desired:
            problems.append(f'The variant {name} does not exist in endpoint "{endpoint_name}".')
            continue
        if name in seen:
            problems.append(f"{where}given more than once.")
        seen.add(name)
        problems += serverless.update_problems(change, desired[name], where)
        if not {"DesiredWeight", "DesiredInstanceCount", "ServerlessUpdateConfig"} & set(change):
            problems.append(f"{where}give DesiredWeight, DesiredInstanceCount or ServerlessUpdateConfig.")
        if change.get("DesiredInstanceCount") == 0:
            problems.append(f"{where}DesiredInstanceCount must be at least 1.")
    _raise_if(problems)
