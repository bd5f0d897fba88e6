"""CreateHyperParameterTuningJob with TrainingJobDefinitions (several algorithms in one tuning
job): each definition named (DefinitionName, unique), with its own TuningObjective (all of one
Type) and HyperParameterRanges, the config giving neither; exactly one of TrainingJobDefinition
and TrainingJobDefinitions; each definition's training jobs get its own static hyperparameters and
objective metric; warm start only for one definition (SageMaker: "Warm start and early stopping
are available only when you're tuning a single algorithm")."""

import copy

import pytest

from protocol.errors import ValidationException
from tests.unit.tuning.helpers import CTX, several_params, tuning_params
from tuning import requests, warm_start


def refusal(params: dict) -> str:
    with pytest.raises(ValidationException) as refused:
        requests.check_create_request(params)
    return refused.value.message


def test_several_named_definitions_with_their_own_objectives_and_ranges_are_accepted():
    requests.check_create_request(several_params("multi"))


def test_exactly_one_of_the_definition_members_is_given():
    both = {**several_params("multi"), "TrainingJobDefinition": tuning_params("x")["TrainingJobDefinition"]}
    assert refusal(both) == "Specify either TrainingJobDefinition or TrainingJobDefinitions, not both."
    neither = several_params("multi")
    del neither["TrainingJobDefinitions"]
    assert refusal(neither) == "TrainingJobDefinition or TrainingJobDefinitions is required."


def test_the_objective_and_ranges_belong_to_each_definition_not_the_config():
    params = several_params(
        "multi", HyperParameterTuningJobObjective={"Type": "Maximize", "MetricName": "acc"}
    )
    assert "HyperParameterTuningJobConfig.HyperParameterTuningJobObjective is not allowed" in refusal(params)
    params = several_params("multi")
    del params["TrainingJobDefinitions"][1]["TuningObjective"]
    assert "TrainingJobDefinitions member 2 needs TuningObjective." in refusal(params)


def test_definition_names_are_unique_and_objective_types_the_same():
    params = several_params("multi")
    params["TrainingJobDefinitions"][1]["DefinitionName"] = "fast"
    assert "Training job definition names must be unique: fast repeated." in refusal(params)
    params = several_params("multi")
    params["TrainingJobDefinitions"][1]["TuningObjective"]["Type"] = "Minimize"
    assert "must have the same Type" in refusal(params)


def test_each_definitions_objective_is_one_of_its_own_metrics():
    params = several_params("multi")
    params["TrainingJobDefinitions"][1]["TuningObjective"]["MetricName"] = "acc"
    assert (
        "The objective metric 'acc' must be one of the training job definition's "
        "AlgorithmSpecification.MetricDefinitions in TrainingJobDefinitions[deep] (defined: score)."
    ) in refusal(params)


def test_a_grid_over_several_definitions_runs_each_grid_whole():
    grid = {"CategoricalParameterRanges": [{"Name": "opt", "Values": ["a", "b", "c"]}]}
    params = several_params("multi", Strategy="Grid", ResourceLimits={"MaxParallelTrainingJobs": 1})
    for body in params["TrainingJobDefinitions"]:
        body["HyperParameterRanges"] = copy.deepcopy(grid)
    requests.check_create_request(params)
    params["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] = 3
    assert "categorical values (6), or left out; it is 3." in refusal(params)


def test_each_training_job_gets_its_definitions_static_hyperparameters_and_objective():
    params = several_params("multi")
    made = requests.training_request(params, "deep", "multi-002-0a1b2c3d", {"depth": "4"}, [])
    assert made["HyperParameters"] == {"epochs": "2", "depth": "4", "_tuning_objective_metric": "score"}
    stored = requests.as_stored(params)
    assert [
        body["StaticHyperParameters"]["_tuning_objective_metric"] for body in stored["TrainingJobDefinitions"]
    ] == ["acc", "score"]
    assert all("ResourceConfig" in body for body in stored["TrainingJobDefinitions"])


def test_warm_start_takes_one_definition_only(db):
    params = {
        **several_params("multi"),
        "WarmStartConfig": {
            "WarmStartType": "TransferLearning",
            "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": "p"}],
        },
    }
    with pytest.raises(ValidationException) as refused:
        warm_start.check(CTX, params)
    assert "Warm start is available only when tuning a single algorithm" in refused.value.message
