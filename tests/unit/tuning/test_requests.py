"""CreateHyperParameterTuningJob's checks and the training jobs' requests. What SageMaker refuses
(Grid with numeric ranges, a Grid MaxNumberOfTrainingJobs other than the number of combinations:
automatic-model-tuning-how-it-works) and what Sageport does not carry out are refused with a
ValidationException that names them; the training job gets the static and tuned hyperparameters
and `_tuning_objective_metric`, as SageMaker's do, and the tuning job's tags (the Tags member's
documentation)."""
import pytest

from protocol.errors import ValidationException
from tests.unit.tuning.helpers import definition
from tuning import requests


def request(**config) -> dict:
    return {
        "HyperParameterTuningJobName": "t",
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "loss"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 3, "MaxParallelTrainingJobs": 1},
            "ParameterRanges": {"CategoricalParameterRanges": [{"Name": "opt", "Values": ["sgd", "adam"]}]},
            **config,
        },
        "TrainingJobDefinition": definition("loss", epochs="2"),
    }


def refusal(params: dict) -> str:
    with pytest.raises(ValidationException) as refused:
        requests.check_create_request(params)
    return refused.value.message


def test_a_random_search_over_a_valid_definition_is_accepted():
    requests.check_create_request(request())


def test_a_hyperband_search_reads_its_max_resource_from_the_epochs_hyperparameter():
    requests.check_create_request(request(Strategy="Hyperband"))


def test_a_strategy_config_is_only_for_hyperband():
    config = {"HyperbandStrategyConfig": {"MaxResource": 3}}
    message = refusal(request(StrategyConfig=config))
    assert "HyperParameterTuningJobConfig.StrategyConfig is only for the Hyperband strategy." in message


def test_a_grid_search_takes_only_categorical_ranges():
    ranges = {"IntegerParameterRanges": [{"Name": "n", "MinValue": "1", "MaxValue": "2"}]}
    message = refusal(request(Strategy="Grid", ParameterRanges=ranges))
    assert "The Grid strategy supports only categorical hyperparameter ranges; not: n." in message


def test_a_grid_search_limit_must_be_the_number_of_combinations():
    limits = {"MaxNumberOfTrainingJobs": 3, "MaxParallelTrainingJobs": 1}
    message = refusal(request(Strategy="Grid", ResourceLimits=limits))
    assert "must be the number of distinct combinations of the categorical values (2)" in message
    requests.check_create_request(request(Strategy="Grid", ResourceLimits={"MaxParallelTrainingJobs": 1}))


def test_a_random_search_needs_its_number_of_training_jobs():
    message = refusal(request(ResourceLimits={"MaxParallelTrainingJobs": 1}))
    assert "ResourceLimits.MaxNumberOfTrainingJobs is required for the Random strategy." in message


def test_the_objective_must_be_a_defined_metric():
    message = refusal(request(HyperParameterTuningJobObjective={"Type": "Maximize", "MetricName": "acc"}))
    assert "The objective metric 'acc' must be one of" in message and "(defined: loss)" in message


def test_a_hyperparameter_both_static_and_tuned_is_refused():
    params = request()
    params["TrainingJobDefinition"]["StaticHyperParameters"]["opt"] = "sgd"
    assert "Hyperparameters cannot be both static and tuned: opt." in refusal(params)


def test_what_sageport_does_not_carry_out_is_refused_by_name():
    params = {**request(), "Autotune": {"Mode": "Enabled"}}
    assert "Autotune is not supported by Sageport" in refusal(params)


def test_early_stopping_auto_is_refused_and_off_accepted():
    message = refusal(request(TrainingJobEarlyStoppingType="Auto"))
    assert "TrainingJobEarlyStoppingType Auto is not supported" in message
    requests.check_create_request(request(TrainingJobEarlyStoppingType="Off"))


def test_the_training_jobs_own_rules_are_checked_at_create():
    params = request()
    params["TrainingJobDefinition"]["ResourceConfig"]["InstanceType"] = "ml.nonexistent.large"
    with pytest.raises(ValidationException):
        requests.check_create_request(params)


def test_a_training_job_gets_static_tuned_and_objective_hyperparameters_and_the_tags():
    tags = [{"Key": "team", "Value": "a"}]
    made = requests.training_request(request(), "", "t-001-0a1b2c3d", {"opt": "adam"}, tags)
    assert made["TrainingJobName"] == "t-001-0a1b2c3d"
    assert made["HyperParameters"] == {"epochs": "2", "opt": "adam", "_tuning_objective_metric": "loss"}
    assert made["Tags"] == tags
    assert made["AlgorithmSpecification"]["TrainingImage"] == "algo:1"
    assert "StaticHyperParameters" not in made


def test_the_sdks_tuning_resource_config_becomes_the_training_jobs_resource_config():
    """SDK v2's tuner sends HyperParameterTuningResourceConfig instead of ResourceConfig."""
    params = request()
    definition = params["TrainingJobDefinition"]
    definition["HyperParameterTuningResourceConfig"] = definition.pop("ResourceConfig")
    requests.check_create_request(params)
    made = requests.training_request(params, "", "t-001-0a1b2c3d", {"opt": "adam"}, [])
    assert made["ResourceConfig"] == {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1}
    definition["HyperParameterTuningResourceConfig"]["InstanceConfigs"] = []
    assert "InstanceConfigs is not supported by Sageport" in refusal(params)


def test_describe_shows_the_objective_among_the_static_hyperparameters_and_a_resource_config():
    """Where SageMaker's Describe has them: SDK v2's HyperparameterTuner.attach deletes
    StaticHyperParameters['_tuning_objective_metric'] and reads ResourceConfig."""
    params = request()
    definition = params["TrainingJobDefinition"]
    definition["HyperParameterTuningResourceConfig"] = definition.pop("ResourceConfig")
    stored = requests.as_stored({**params, "Tags": [{"Key": "a", "Value": "b"}]})
    assert "Tags" not in stored
    assert stored["TrainingJobDefinition"]["StaticHyperParameters"] == {
        "epochs": "2", "_tuning_objective_metric": "loss",
    }
    assert stored["TrainingJobDefinition"]["ResourceConfig"] == {
        "InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1,
    }
    assert "_tuning_objective_metric" not in params["TrainingJobDefinition"]["StaticHyperParameters"]
