"""Serverless variants (`ProductionVariant.ServerlessConfig`): what SageMaker accepts, and what a
serverless variant means for the rest of hosting.

A serverless variant has no instances. Its containers are started by the requests themselves
(hosting/runtime_api/serverless_gate.py raises the deployment's desired count, up to
MaxConcurrency, and the reconciler starts what is missing), and stopped once idle for
`SAGEPORT_SERVERLESS_IDLE_SECONDS` (hosting/serverless_scaling.py lowers the count, never below
ProvisionedConcurrency, and the reconciler drains the extra containers). The deployment's
`desired[<variant>]` carries the variant's effective ServerlessConfig (UpdateEndpointWeightsAndCapacities'
ServerlessUpdateConfig changes it there) beside its count.

SageMaker's own exclusions are refused: a serverless endpoint config has one variant, no
instances, no asynchronous inference, and a single-model container (no GPUs: a container gets
MemorySizeInMB of memory and no device)."""

from hosting import multi_model
from hosting.models import ROUTED_PHASES, ContainerStatus
from protocol.errors import ValidationException

MEMORY_SIZES_MB = (1024, 2048, 3072, 4096, 5120, 6144)
INSTANCE_MEMBERS = ("InstanceType", "InitialInstanceCount")
CONFIG_KEY = "ServerlessConfig"


def config(variant: dict) -> dict | None:
    """The variant's ServerlessConfig as requested (None: an instance-based variant)."""
    return variant.get(CONFIG_KEY)


def is_serverless_config(params: dict) -> bool:
    return any(config(variant) is not None for variant in params["ProductionVariants"])


# --- CreateEndpointConfig ----------------------------------------------------------------------


def config_problems(params: dict) -> list[str]:
    """SageMaker's rules for an endpoint config with a serverless variant (the shape already
    checked each member's range)."""
    variants = params["ProductionVariants"]
    if not is_serverless_config(params):
        return []
    problems = []
    if len(variants) > 1:
        problems.append("A serverless endpoint configuration supports only one production variant.")
    if "AsyncInferenceConfig" in params:
        problems.append("AsyncInferenceConfig is not supported for serverless endpoints.")
    for variant in variants:
        problems += _variant_problems(variant)
    return problems


def _variant_problems(variant: dict) -> list[str]:
    where = f"Variant '{variant['VariantName']}': "
    serverless = config(variant)
    if serverless is None:
        return [
            f"{where}every production variant of a serverless endpoint configuration needs ServerlessConfig."
        ]
    problems = [
        f"{where}{member} cannot be given with ServerlessConfig: a serverless variant has no instances."
        for member in INSTANCE_MEMBERS
        if member in variant
    ]
    memory = serverless["MemorySizeInMB"]
    if memory not in MEMORY_SIZES_MB:
        sizes = ", ".join(str(size) for size in MEMORY_SIZES_MB)
        problems.append(
            f"{where}ServerlessConfig.MemorySizeInMB must be one of {sizes} (1 GB steps), got {memory}."
        )
    problems += _concurrency_problems(serverless, where + "ServerlessConfig.")
    return problems


def _concurrency_problems(serverless: dict, where: str) -> list[str]:
    provisioned, maximum = serverless.get("ProvisionedConcurrency"), serverless.get("MaxConcurrency")
    if provisioned is not None and maximum is not None and provisioned > maximum:
        return [
            f"{where}ProvisionedConcurrency ({provisioned}) must be less than or equal to "
            f"MaxConcurrency ({maximum})."
        ]
    return []


def instance_members_required(variant: dict) -> bool:
    return config(variant) is None


def model_problems(variant: dict, model_request: dict) -> list[str]:
    """A serverless variant's model: one container of one model (multi-model endpoints are
    among SageMaker's serverless exclusions)."""
    if config(variant) is None:
        return []
    container = model_request.get("PrimaryContainer") or model_request["Containers"][0]
    if multi_model.is_multi_model(container):
        return [
            f"Variant '{variant['VariantName']}': a serverless variant cannot serve a multi-model "
            f"model ({variant['ModelName']} has Mode MultiModel)."
        ]
    return []


# --- Deployments ---------------------------------------------------------------------------------


def initial_desired(variant: dict) -> dict:
    """A variant's `desired` entry when its deployment is created: a serverless one starts with
    its provisioned containers only (none without ProvisionedConcurrency)."""
    serverless = config(variant)
    if serverless is None:
        return {
            "DesiredWeight": variant["InitialVariantWeight"],
            "DesiredInstanceCount": variant["InitialInstanceCount"],
        }
    return {
        "DesiredWeight": variant["InitialVariantWeight"],
        "DesiredInstanceCount": serverless.get("ProvisionedConcurrency", 0),
        CONFIG_KEY: dict(serverless),
    }


def effective(desired_entry: dict) -> dict | None:
    """The variant's ServerlessConfig as it applies now (None: instance-based)."""
    return desired_entry.get(CONFIG_KEY)


def provisioned(serverless: dict) -> int:
    return serverless.get("ProvisionedConcurrency", 0)


def fleet_words(variant: dict, values: dict) -> str:
    """How the deployment history names the variant's capacity."""
    serverless = effective(values)
    if serverless is None:
        return f"{values['DesiredInstanceCount']} × {variant['InstanceType']}"
    return (
        f"serverless {serverless['MemorySizeInMB']} MB, up to {serverless['MaxConcurrency']} concurrent, "
        f"{provisioned(serverless)} provisioned"
    )


def memory_bytes(variant: dict) -> int:
    return config(variant)["MemorySizeInMB"] * 1024 * 1024


# --- UpdateEndpointWeightsAndCapacities ---------------------------------------------------------


def update_problems(change: dict, values: dict, where: str) -> list[str]:
    """A DesiredWeightAndCapacity for a variant with `values` as its desired entry."""
    serverless, update = effective(values), change.get("ServerlessUpdateConfig")
    if serverless is None:
        return [f"{where}ServerlessUpdateConfig applies to a serverless variant only."] if update else []
    problems = []
    if "DesiredInstanceCount" in change:
        problems.append(
            f"{where}DesiredInstanceCount cannot be given for a serverless variant: "
            "give ServerlessUpdateConfig."
        )
    if update is not None:
        problems += _concurrency_problems({**serverless, **update}, where + "ServerlessUpdateConfig.")
    return problems


def apply_update(values: dict, update: dict) -> dict:
    """The desired entry after a ServerlessUpdateConfig: the new limits, and the count kept within
    them (at least the provisioned containers, at most MaxConcurrency)."""
    serverless = {**values[CONFIG_KEY], **update}
    count = min(max(values["DesiredInstanceCount"], provisioned(serverless)), serverless["MaxConcurrency"])
    return {**values, CONFIG_KEY: serverless, "DesiredInstanceCount": count}


# --- UpdateEndpoint ----------------------------------------------------------------------------------


def check_conversion(running: dict, new: dict) -> None:
    """SageMaker does not turn an instance-based endpoint into a serverless one, nor back."""
    if is_serverless_config(running) != is_serverless_config(new):
        kinds = ("serverless", "instance-based")
        was, becomes = kinds if is_serverless_config(running) else reversed(kinds)
        raise ValidationException(
            f"An endpoint with {was} variants cannot be updated to an endpoint configuration with "
            f"{becomes} variants: create a new endpoint instead."
        )


# --- DescribeEndpoint ----------------------------------------------------------------------------


def summarized(values: dict, summary: dict) -> dict:
    """A variant summary as SageMaker shows a serverless one: its current and desired
    ServerlessConfig instead of instance counts (its containers come and go with the requests)."""
    serverless = effective(values)
    if serverless is None:
        return summary
    counts = ("CurrentInstanceCount", "DesiredInstanceCount")
    trimmed = {key: value for key, value in summary.items() if key not in counts}
    return {
        **trimmed,
        "CurrentServerlessConfig": dict(serverless),
        "DesiredServerlessConfig": dict(serverless),
    }


def fleet_now(endpoint) -> list[dict]:
    """The console's view of each serverless variant that takes traffic: its config, and its
    containers in service against those wanted right now."""
    found = []
    for deployment in endpoint.deployments.filter(phase__in=ROUTED_PHASES).prefetch_related("containers"):
        for name, values in deployment.desired.items():
            if effective(values) is None:
                continue
            in_service = sum(
                1
                for row in deployment.containers.all()
                if row.variant_name == name and row.status == ContainerStatus.IN_SERVICE
            )
            wanted = values["DesiredInstanceCount"]
            found.append(
                {"variant": name, "config": effective(values), "in_service": in_service, "wanted": wanted}
            )
    return found
