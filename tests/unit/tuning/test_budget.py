"""How the training jobs are shared among the definitions (tuning/budget.py): an even split of
MaxNumberOfTrainingJobs (the first taking the remainder), each Grid definition its combinations,
and the definitions taking turns, so every number has one definition whoever asks."""

import pytest

from tests.unit.tuning.helpers import several_params, tuning_params
from tuning import budget, definitions


def test_the_budget_is_split_evenly_the_first_definitions_taking_the_remainder():
    assert budget.quotas(definitions.of(several_params("m", maximum=5))) == [3, 2]
    assert budget.quotas(definitions.of(several_params("m", maximum=4))) == [2, 2]
    assert budget.quotas(definitions.of(tuning_params("one", maximum=7))) == [7]


def test_a_grid_definition_gets_its_number_of_combinations():
    params = several_params("m", Strategy="Grid")
    params["TrainingJobDefinitions"][0]["HyperParameterRanges"] = {
        "CategoricalParameterRanges": [
            {"Name": "a", "Values": ["1", "2"]},
            {"Name": "b", "Values": ["x", "y"]},
        ]
    }
    params["TrainingJobDefinitions"][1]["HyperParameterRanges"] = {
        "CategoricalParameterRanges": [{"Name": "c", "Values": ["1"]}]
    }
    assert budget.quotas(definitions.of(params)) == [4, 1]


def test_the_definitions_take_turns_skipping_one_whose_quota_is_used():
    owners = [budget.owner([2, 1, 3], number) for number in range(1, 7)]
    assert owners == [(0, 1), (1, 1), (2, 1), (0, 2), (2, 2), (2, 3)]
    assert [budget.owner([4], number) for number in (1, 4)] == [(0, 1), (0, 4)]
    with pytest.raises(ValueError):
        budget.owner([2, 1, 3], 7)
