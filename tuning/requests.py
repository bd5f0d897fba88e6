"""Checks on a CreateHyperParameterTuningJob request that the botocore shape cannot express, and
the CreateTrainingJob request of each training job the tuning job launches.

Each refusal is a ValidationException whose text says what to change; what Sageport does not
carry out (several training job definitions, early stopping of the Auto kind, completion
criteria) is refused rather than silently ignored. A warm start's parents are checked by
tuning/warm_start.py, which needs the caller's account."""
import copy

from protocol.errors import ValidationException
from protocol.validation import validate_input
from training import requests as training
from tuning import hyperband, ranges, strategies

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
    "TrainingJobDefinitions": "several training job definitions are not supported; "
    "give one TrainingJobDefinition",
    "Autotune": "Autotune is not supported",
}
UNSUPPORTED_CONFIG = {
    "TuningJobCompletionCriteria": "completion criteria are not supported; the search ends after "
    "ResourceLimits.MaxNumberOfTrainingJobs training jobs",
}
UNSUPPORTED_DEFINITION = {
    "DefinitionName": "it names one of several TrainingJobDefinitions, which are not supported",
    "TuningObjective": "give HyperParameterTuningJobConfig.HyperParameterTuningJobObjective",
    "HyperParameterRanges": "give HyperParameterTuningJobConfig.ParameterRanges",
}


def check_create_request(params: dict) -> None:
    problems = [
        f"{member} is not supported by Sageport: {why}." for member, why in UNSUPPORTED_MEMBERS.items()
        if member in params
    ]
    config = params["HyperParameterTuningJobConfig"]
    definition = params.get("TrainingJobDefinition")
    problems += _config_problems(config, (definition or {}).get("StaticHyperParameters", {}))
    if definition is None:
        problems.append("TrainingJobDefinition is required.")
    else:
        problems += _definition_problems(definition, config)
    if problems:
        raise ValidationException(" ".join(problems))
    # The training jobs must pass CreateTrainingJob's own checks: try the first one now, so that
    # a mistake is told at create rather than as N failed training jobs.
    parsed, _ = ranges.parse(config.get("ParameterRanges"))
    first = strategies.hyperparameters_for(config, parsed, 0, 1, strategies.History())
    sample = training_request(params, "check", first, [])
    validate_input("sagemaker", "CreateTrainingJob", sample)
    training.check_create_request(sample)


def _config_problems(config: dict, static: dict[str, str]) -> list[str]:
    problems = [f"HyperParameterTuningJobConfig.{member} is not supported by Sageport: {why}."
                for member, why in UNSUPPORTED_CONFIG.items() if member in config]
    strategy = config["Strategy"]  # one of the four, as botocore's enum says
    if strategy == strategies.HYPERBAND:
        problems += hyperband.problems(config, static)
    elif "StrategyConfig" in config:
        problems.append("HyperParameterTuningJobConfig.StrategyConfig is only for the Hyperband strategy.")
    elif config.get("TrainingJobEarlyStoppingType", "Off") != "Off":
        problems.append("TrainingJobEarlyStoppingType Auto is not supported by Sageport: give Off.")
    if "HyperParameterTuningJobObjective" not in config:
        problems.append("HyperParameterTuningJobConfig.HyperParameterTuningJobObjective is required.")
    if "MaxRuntimeInSeconds" in config["ResourceLimits"]:
        problems.append("ResourceLimits.MaxRuntimeInSeconds is not supported by Sageport.")
    parsed, range_problems = ranges.parse(config.get("ParameterRanges"))
    problems += range_problems
    if not parsed and not range_problems:
        problems.append("ParameterRanges must name at least one hyperparameter to tune.")
    if strategy == strategies.GRID:
        problems += _grid_problems(config, parsed)
    elif "MaxNumberOfTrainingJobs" not in config["ResourceLimits"]:
        problems.append(f"ResourceLimits.MaxNumberOfTrainingJobs is required for the {strategy} strategy.")
    return problems


def _grid_problems(config: dict, parsed: list[ranges.Range]) -> list[str]:
    """Grid search takes only categorical ranges; MaxNumberOfTrainingJobs, which it need not be
    given, must then be the number of combinations (automatic-model-tuning-how-it-works)."""
    numeric = [found.name for found in parsed if isinstance(found, ranges.NumericRange)]
    if numeric:
        return [
            f"The Grid strategy supports only categorical hyperparameter ranges; not: {', '.join(numeric)}."
        ]
    combinations = ranges.grid_size(parsed)
    given = config["ResourceLimits"].get("MaxNumberOfTrainingJobs")
    if given is not None and given != combinations:
        return [
            f"For the Grid strategy, ResourceLimits.MaxNumberOfTrainingJobs must be the number of distinct "
            f"combinations of the categorical values ({combinations}), or left out; it is {given}."
        ]
    return []


def _definition_problems(definition: dict, config: dict) -> list[str]:
    problems = [f"TrainingJobDefinition.{member} is not supported by Sageport: {why}."
                for member, why in UNSUPPORTED_DEFINITION.items() if member in definition]
    problems += _resource_problems(definition)
    static = definition.get("StaticHyperParameters", {})
    tuned, _ = ranges.parse(config.get("ParameterRanges"))
    both = sorted(found.name for found in tuned if found.name in static)
    if both:
        problems.append(f"Hyperparameters cannot be both static and tuned: {', '.join(both)}.")
    objective = config.get("HyperParameterTuningJobObjective")
    metrics = [metric["Name"] for metric in definition["AlgorithmSpecification"].get("MetricDefinitions", [])]
    if objective is not None and objective["MetricName"] not in metrics:
        problems.append(
            f"The objective metric '{objective['MetricName']}' must be one of the training job definition's "
            f"AlgorithmSpecification.MetricDefinitions (defined: {', '.join(metrics) or 'none'})."
        )
    return problems


def _resource_problems(definition: dict) -> list[str]:
    """ResourceConfig, or HyperParameterTuningResourceConfig (what the SageMaker SDK sends) with
    one instance type; its InstanceConfigs (alternatives tried in order) are not carried out."""
    tuning_resources = definition.get("HyperParameterTuningResourceConfig")
    if tuning_resources is None:
        return [] if "ResourceConfig" in definition else ["TrainingJobDefinition.ResourceConfig is required."]
    if "ResourceConfig" in definition:
        return ["Give TrainingJobDefinition.ResourceConfig or HyperParameterTuningResourceConfig, not both."]
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
    """The request as Describe shows it: without Tags, with `_tuning_objective_metric` among the
    static hyperparameters, where SageMaker puts it, and with the training jobs' ResourceConfig
    (the SDK's `HyperparameterTuner.attach` reads both there, although its `fit` sends
    HyperParameterTuningResourceConfig)."""
    stored = copy.deepcopy({key: value for key, value in params.items() if key != "Tags"})
    stored["TrainingJobDefinition"]["ResourceConfig"] = _resource_config(params["TrainingJobDefinition"])
    objective = params["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]
    static = stored["TrainingJobDefinition"].setdefault("StaticHyperParameters", {})
    static[OBJECTIVE_HYPERPARAMETER] = objective["MetricName"]
    return stored


def training_request(params: dict, name: str, tuned: dict[str, str], tags: list[dict]) -> dict:
    """The CreateTrainingJob request of one training job: the definition, the static and tuned
    hyperparameters, the objective's name, the tuning job's tags."""
    definition = params["TrainingJobDefinition"]
    request = {member: copy.deepcopy(definition[member]) for member in COPIED_MEMBERS if member in definition}
    objective = params["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]
    request.update(
        TrainingJobName=name,
        ResourceConfig=_resource_config(definition),
        HyperParameters={
            **definition.get("StaticHyperParameters", {}),
            **tuned,
            OBJECTIVE_HYPERPARAMETER: objective["MetricName"],
        },
    )
    if tags:
        request["Tags"] = copy.deepcopy(tags)
    return request
