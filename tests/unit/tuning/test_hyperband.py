"""The Hyperband search: its configuration as SageMaker's API reference gives it (MaxResource
read from the epochs hyperparameters when not given, at most 20,000; early stopping type Off), the
brackets' decisions replayed from the values alone, and the reconciler stopping, over real rows,
the training jobs they judge under-performing and those that used up MaxResource."""
import pytest

from tests.unit.tuning.helpers import create, report, step, trainings
from tuning import hyperband
from tuning.presenters import describe_tuning_job

ONE_BRACKET = hyperband.Resources(minimum=1, maximum=2)  # MaxResource / MinResource < 3: one bracket


def test_max_resource_is_read_from_the_epochs_hyperparameter_when_not_given():
    assert hyperband.resources({}, {"n_epochs": "30"}) == hyperband.Resources(minimum=1, maximum=30)
    given = {"StrategyConfig": {"HyperbandStrategyConfig": {"MinResource": 2, "MaxResource": 9}}}
    assert hyperband.resources(given, {"epochs": "30"}) == hyperband.Resources(minimum=2, maximum=9)


@pytest.mark.parametrize(
    ("config", "static", "message"),
    [
        ({}, {"lr": "0.1"}, "HyperbandStrategyConfig.MaxResource is required when no static hyperparameter"),
        ({}, {"epochs": "20001"}, "MaxResource must be at most 20000; it is 20001."),
        ({"StrategyConfig": {"HyperbandStrategyConfig": {"MinResource": 5, "MaxResource": 4}}}, {},
         "MinResource (5) must not be greater than MaxResource (4)."),
        ({"TrainingJobEarlyStoppingType": "Auto"}, {"epochs": "3"},
         "TrainingJobEarlyStoppingType must be Off with the Hyperband strategy"),
    ],
)
def test_a_configuration_hyperband_cannot_run_is_refused(config, static, message):
    assert message in " ".join(hyperband.problems(config, static))


def test_in_one_bracket_a_later_training_job_worse_at_min_resource_is_stopped():
    reports = [[(1, 0.2), (2, 0.4)], [(3, 0.1)], [(4, 0.3)]]  # maximizing: the second is worse
    assert hyperband.stopped_early(ONE_BRACKET, True, "t", reports) == {1}
    assert hyperband.stopped_early(ONE_BRACKET, False, "t", reports) == {2}


def test_no_training_job_is_stopped_before_min_resource():
    limits = hyperband.Resources(minimum=3, maximum=5)
    reports = [[(1, 0.9), (2, 0.9), (3, 0.9)], [(4, 0.1), (5, 0.1)]]
    assert hyperband.stopped_early(limits, True, "t", reports) == set()
    assert hyperband.stopped_early(limits, True, "t", [*reports[:1], [*reports[1], (6, 0.1)]]) == {1}


def test_a_decision_is_the_same_at_every_later_look():
    """Level-triggered: a training job judged on its first values stays judged whatever came later."""
    limits = hyperband.Resources(minimum=1, maximum=9)
    reports = [[(100 * job + step, (job * 7919 % 13) / 13 + step / 100) for step in range(9)]
               for job in range(12)]
    at_the_end = hyperband.stopped_early(limits, True, "search", reports)
    halfway = [[point for point in points if point[0] < 600] for points in reports]
    assert hyperband.stopped_early(limits, True, "search", halfway) <= at_the_end
    assert at_the_end  # some are stopped, not all
    assert len(at_the_end) < len(reports)


def hyperband_search(name: str, maximum: int = 3):
    return create(
        name, maximum=maximum, parallel=1, Strategy="Hyperband",
        StrategyConfig={"HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": 2}},
    )


def test_the_reconciler_stops_the_training_job_hyperband_judges_under_performing(db):
    job = step(hyperband_search("hb"))
    first = trainings(job)[0]
    report(first, (1000, 0.8))
    assert step(job) and trainings(job)[0].training_job_status == "InProgress"  # the only one: it goes on
    report(first, (2000, 0.9))
    job = step(job)
    assert trainings(job)[0].training_job_status == "Stopping"  # MaxResource reached
    first_done = trainings(job)[0]
    first_done.training_job_status = "Stopped"
    first_done.save(update_fields=["training_job_status"])

    job = step(job)
    second = trainings(job)[1]
    report(second, (3000, 0.5))  # worse than the first at one epoch
    job = step(job)
    assert trainings(job)[1].training_job_status == "Stopping"
    summary = describe_tuning_job(job)
    assert summary["TrainingJobStatusCounters"]["InProgress"] == 1
    assert summary["HyperParameterTuningJobConfig"]["Strategy"] == "Hyperband"
