"""ParameterRanges and the Random and Grid strategies, as SageMaker documents them
(automatic-model-tuning-define-ranges, automatic-model-tuning-how-it-works): values within the
ranges, the scales' domains, every grid combination once, the same choices on every worker."""
import math
import random
from collections import Counter

import pytest

from tuning import ranges, strategies

NONE = strategies.History()


def parsed(**members) -> list[ranges.Range]:
    found, problems = ranges.parse(members)
    assert problems == []
    return found


def draws(found: list[ranges.Range], count: int = 2000) -> list[dict[str, str]]:
    rng = random.Random(1)
    return [ranges.sample(found, rng) for _ in range(count)]


def test_linear_integer_samples_give_every_value_of_the_range_alike_and_nothing_else():
    found = parsed(IntegerParameterRanges=[
        {"Name": "depth", "MinValue": "2", "MaxValue": "5", "ScalingType": "Linear"}
    ])
    counts = Counter(point["depth"] for point in draws(found, 4000))
    assert set(counts) == {"2", "3", "4", "5"}
    assert all(800 < count < 1200 for count in counts.values())


def test_logarithmic_integer_samples_stay_whole_and_within_the_range():
    found = parsed(IntegerParameterRanges=[
        {"Name": "trees", "MinValue": "1", "MaxValue": "1000", "ScalingType": "Logarithmic"}
    ])
    values = [int(point["trees"]) for point in draws(found)]
    assert min(values) >= 1 and max(values) <= 1000
    assert sum(value < 32 for value in values) > len(values) / 3


def test_logarithmic_samples_are_uniform_over_the_orders_of_magnitude():
    found = parsed(ContinuousParameterRanges=[
        {"Name": "lr", "MinValue": "0.0001", "MaxValue": "1", "ScalingType": "Logarithmic"}
    ])
    values = [float(point["lr"]) for point in draws(found, 4000)]
    assert all(0.0001 <= value <= 1 for value in values)
    decades = Counter(math.floor(-math.log10(value)) for value in values if value < 1)
    # Four decades, each about a quarter of the draws (a linear scale would put 90% in the last).
    assert all(800 < decades[decade] < 1200 for decade in range(4))


def test_reverse_logarithmic_samples_crowd_towards_one():
    found = parsed(ContinuousParameterRanges=[
        {"Name": "momentum", "MinValue": "0", "MaxValue": "0.999", "ScalingType": "ReverseLogarithmic"}
    ])
    values = [float(point["momentum"]) for point in draws(found)]
    assert all(0 <= value <= 0.999 for value in values)
    assert sum(value > 0.9 for value in values) > len(values) / 2


def test_auto_scaling_samples_linearly():
    found = parsed(ContinuousParameterRanges=[{"Name": "x", "MinValue": "0", "MaxValue": "10"}])
    values = [float(point["x"]) for point in draws(found)]
    assert 0.4 < sum(value < 5 for value in values) / len(values) < 0.6


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        ({"IntegerParameterRanges": [{"Name": "n", "MinValue": "1.5", "MaxValue": "3"}]},
         "The integer hyperparameter range 'n' must have integer MinValue and MaxValue"),
        ({"ContinuousParameterRanges": [{"Name": "x", "MinValue": "2", "MaxValue": "1"}]},
         "has MinValue 2 greater than MaxValue 1."),
        ({"ContinuousParameterRanges": [{"Name": "x", "MinValue": "0", "MaxValue": "1",
                                         "ScalingType": "Logarithmic"}]},
         "uses Logarithmic scaling, which needs every value to be greater than 0"),
        ({"IntegerParameterRanges": [{"Name": "n", "MinValue": "0", "MaxValue": "1",
                                      "ScalingType": "ReverseLogarithmic"}]},
         "which only continuous ranges support"),
        ({"ContinuousParameterRanges": [{"Name": "x", "MinValue": "0", "MaxValue": "1",
                                         "ScalingType": "ReverseLogarithmic"}]},
         "needs every value within 0 <= value < 1"),
        ({"ContinuousParameterRanges": [{"Name": "x", "MinValue": "0", "MaxValue": "1"}],
          "CategoricalParameterRanges": [{"Name": "x", "Values": ["a"]}]},
         "Hyperparameter names must be unique across the ranges; repeated: x."),
    ],
)
def test_a_range_outside_its_scale_or_malformed_is_a_problem(members, problem):
    _, problems = ranges.parse(members)
    assert any(problem in found for found in problems), problems


def test_the_grid_holds_every_combination_exactly_once():
    found = parsed(CategoricalParameterRanges=[
        {"Name": "a", "Values": ["1", "2", "3"]}, {"Name": "b", "Values": ["x", "y"]}
    ])
    points = [ranges.grid_point(found, index) for index in range(ranges.grid_size(found))]
    assert len(points) == 6
    assert {(point["a"], point["b"]) for point in points} == {(a, b) for a in "123" for b in "xy"}


def test_the_random_choice_of_a_training_job_depends_only_on_the_seed_and_its_number():
    config = {"Strategy": "Random", "ResourceLimits": {"MaxNumberOfTrainingJobs": 5}}
    found = parsed(ContinuousParameterRanges=[{"Name": "x", "MinValue": "0", "MaxValue": "1"}])
    first = [strategies.hyperparameters_for(config, found, 42, n, n, NONE) for n in range(1, 6)]
    again = [strategies.hyperparameters_for(config, found, 42, n, n, NONE) for n in range(1, 6)]
    other_seed = [strategies.hyperparameters_for(config, found, 43, n, n, NONE) for n in range(1, 6)]
    assert first == again and first != other_seed
    assert len({point["x"] for point in first}) == 5


def test_a_grid_search_takes_the_combinations_in_order():
    config = {"Strategy": "Grid", "ResourceLimits": {"MaxParallelTrainingJobs": 2}}
    found = parsed(CategoricalParameterRanges=[{"Name": "a", "Values": ["1", "2", "3"]}])
    chosen = [strategies.hyperparameters_for(config, found, 0, n, n, NONE)["a"] for n in (1, 2, 3)]
    assert chosen == ["1", "2", "3"]
