"""Checks on a CreateHyperParameterTuningJob request that the botocore shape cannot express, and
the CreateTrainingJob request of each training job the tuning job launches.

The definitions' own shape (one TrainingJobDefinition, or several TrainingJobDefinitions) is
checked by tuning/definitions.py first, then each definition as a search of its own. Each refusal
is a ValidationException whose text says what to change; what Sageport does not carry out (early
stopping of the Auto kind, Autotune, MaxRuntimeInSeconds) is refused rather than silently
ignored. A warm start's parents are checked by tuning/warm_start.py, which needs the caller's
account."""
import copy

from protocol.errors import ValidationException
from protocol.validation import validate_input
from training import requests as training
from tuning import definitions, hyperband, ranges, strategies

# SageMaker adds the objective metric's name to every training job's hyperparameters.
OBJECTIVE_HYPERPARAMETER = "_tuning_objective_metric"
# Members of HyperParameterTrainingJobDefinition that a CreateTrainingJob request takes as they are.
COPIED_MEMBERS = (
    "AlgorithmSpecification", "RoleArn", "InputDataConfig", "VpcConfig", "OutputDataConfig",
    "StoppingCondition", "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining", "CheckpointConfig", "RetryStrategy", "Environment",
)
# HyperParameterTuningResourceConfig's members that a training job's ResourceConfig has too.
RESOURCE_MEMBERS = ("InstanceType", "InstanceCount", "VolumeSizeInGB", "VolumeKmsKeyId")
UNSUPPORTED_MEMBERS = {
    "Autotune": "Autotune is not supported",
}


def check_create_request(params: dict) -> None:
    problems = [
        f"{member} is not supported by Sageport: {why}." for member, why in UNSUPPORTED_MEMBERS.items()
        if member in params
    ]
    problems += definitions.problems(params)
    if problems:
        raise ValidationException(" ".join(problems))
    found = definitions.of(params)
    problems += _config_problems(params["HyperParameterTuningJobConfig"], found)
    for definition in found:
        problems += _definition_problems(definition)
    if problems:
        raise ValidationException(" ".join(problems))
    # The training jobs must pass CreateTrainingJob's own checks: try each definition's first one
    # now, so that a mistake is told at create rather than as N failed training jobs.
    for definition in found:
        parsed = definition.parsed()
        first = strategies.hyperparameters_for(definition.config, parsed, 0, 1, 1, strategies.History())
        sample = training_request(params, definition.name, "check", first, [])
        validate_input("sagemaker", "CreateTrainingJob", sample)
        training.check_create_request(sample)


def _label(definition: definitions.Definition) -> str:
    """Where a definition's member is in the request, for the messages."""
    return f"TrainingJobDefinitions[{definition.name}]" if definition.name else "TrainingJobDefinition"


def _within(definition: definitions.Definition) -> str:
    return f" in {_label(definition)}" if definition.name else ""


def _config_problems(config: dict, found: list[definitions.Definition]) -> list[str]:
    problems = []
    strategy = config["Strategy"]  # one of the four, as botocore's enum says
    if strategy == strategies.HYPERBAND:
        for definition in found:
            problems += hyperband.problems(definition.config, definition.static)
    elif "StrategyConfig" in config:
        problems.append("HyperParameterTuningJobConfig.StrategyConfig is only for the Hyperband strategy.")
    elif config.get("TrainingJobEarlyStoppingType", "Off") != "Off":
        problems.append("TrainingJobEarlyStoppingType Auto is not supported by Sageport: give Off.")
    if "MaxRuntimeInSeconds" in config["ResourceLimits"]:
        problems.append("ResourceLimits.MaxRuntimeInSeconds is not supported by Sageport.")
    for definition in found:
        parsed, range_problems = ranges.parse(definition.config.get("ParameterRanges"))
        problems += range_problems
        if not parsed and not range_problems:
            where = f"{_label(definition)}.HyperParameterRanges" if definition.name else "ParameterRanges"
            problems.append(f"{where} must name at least one hyperparameter to tune.")
    if strategy == strategies.GRID:
        problems += _grid_problems(config, found)
    elif "MaxNumberOfTrainingJobs" not in config["ResourceLimits"]:
        problems.append(f"ResourceLimits.MaxNumberOfTrainingJobs is required for the {strategy} strategy.")
    return problems


def _grid_problems(config: dict, found: list[definitions.Definition]) -> list[str]:
    """Grid search takes only categorical ranges; MaxNumberOfTrainingJobs, which it need not be
    given, must then be the number of combinations (automatic-model-tuning-how-it-works), over
    all the definitions when there are several (each definition's grid is run whole)."""
    numeric = [found.name for definition in found for found in definition.parsed()
               if isinstance(found, ranges.NumericRange)]
    if numeric:
        return [
            f"The Grid strategy supports only categorical hyperparameter ranges; not: {', '.join(numeric)}."
        ]
    combinations = sum(ranges.grid_size(definition.parsed()) for definition in found)
    given = config["ResourceLimits"].get("MaxNumberOfTrainingJobs")
    if given is not None and given != combinations:
        return [
            f"For the Grid strategy, ResourceLimits.MaxNumberOfTrainingJobs must be the number of distinct "
            f"combinations of the categorical values ({combinations}), or left out; it is {given}."
        ]
    return []


def _definition_problems(definition: definitions.Definition) -> list[str]:
    label = _label(definition)
    problems = _resource_problems(definition.body, label)
    tuned = definition.parsed()
    both = sorted(found.name for found in tuned if found.name in definition.static)
    if both:
        problems.append(
            f"Hyperparameters cannot be both static and tuned{_within(definition)}: {', '.join(both)}."
        )
    objective = definition.objective
    specification = definition.body["AlgorithmSpecification"]
    metrics = [metric["Name"] for metric in specification.get("MetricDefinitions", [])]
    if objective["MetricName"] not in metrics:
        problems.append(
            f"The objective metric '{objective['MetricName']}' must be one of the training job definition's "
            f"AlgorithmSpecification.MetricDefinitions{_within(definition)} "
            f"(defined: {', '.join(metrics) or 'none'})."
        )
    return problems


def _resource_problems(definition: dict, label: str) -> list[str]:
    """ResourceConfig, or HyperParameterTuningResourceConfig (what the SageMaker SDK sends) with
    one instance type; its InstanceConfigs (alternatives tried in order) are not carried out."""
    tuning_resources = definition.get("HyperParameterTuningResourceConfig")
    if tuning_resources is None:
        return [] if "ResourceConfig" in definition else [f"{label}.ResourceConfig is required."]
    if "ResourceConfig" in definition:
        return [f"Give {label}.ResourceConfig or HyperParameterTuningResourceConfig, not both."]
    if "InstanceConfigs" in tuning_resources:
        return [
            "HyperParameterTuningResourceConfig.InstanceConfigs is not supported by Sageport: give its "
            "InstanceType and InstanceCount."
        ]
    return []


def _resource_config(definition: dict) -> dict:
    """The training jobs' ResourceConfig."""
    if "ResourceConfig" in definition:
        return copy.deepcopy(definition["ResourceConfig"])
    tuning_resources = definition["HyperParameterTuningResourceConfig"]
    return {member: tuning_resources[member] for member in RESOURCE_MEMBERS if member in tuning_resources}


def as_stored(params: dict) -> dict:
    """The request as Describe shows it: without Tags, with `_tuning_objective_metric` among each
    definition's static hyperparameters, where SageMaker puts it, and with the training jobs'
    ResourceConfig (the SDK's `HyperparameterTuner.attach` reads both there, although its `fit`
    sends HyperParameterTuningResourceConfig)."""
    stored = copy.deepcopy({key: value for key, value in params.items() if key != "Tags"})
    bodies = stored[definitions.SEVERAL] if definitions.several(stored) else [stored["TrainingJobDefinition"]]
    for body, definition in zip(bodies, definitions.of(params), strict=True):
        body["ResourceConfig"] = _resource_config(definition.body)
        static = body.setdefault("StaticHyperParameters", {})
        static[OBJECTIVE_HYPERPARAMETER] = definition.objective["MetricName"]
    return stored


def training_request(
    params: dict, definition_name: str, name: str, tuned: dict[str, str], tags: list[dict]
) -> dict:
    """The CreateTrainingJob request of one training job: its definition, the static and tuned
    hyperparameters, the definition's objective's name, the tuning job's tags."""
    definition = definitions.named(params, definition_name)
    body = definition.body
    request = {member: copy.deepcopy(body[member]) for member in COPIED_MEMBERS if member in body}
    request.update(
        TrainingJobName=name,
        ResourceConfig=_resource_config(body),
        HyperParameters={
            **definition.static,
            **tuned,
            OBJECTIVE_HYPERPARAMETER: definition.objective["MetricName"],
        },
    )
    if tags:
        request["Tags"] = copy.deepcopy(tags)
    return request
