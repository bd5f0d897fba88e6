"""TuningJobCompletionCriteria's decisions (tuning/completion.py) over the training jobs' objectives
in the order they ended: a target reached, a run of training jobs not improving the best by 1%,
Sageport's convergence rule (W = max(5, planned/4) in a row not improving)."""

from datetime import UTC, datetime, timedelta

from tuning import completion

START = datetime(2026, 1, 1, tzinfo=UTC)


def scored(*values: float) -> list[tuple[datetime, float]]:
    return [(START + timedelta(minutes=index), value) for index, value in enumerate(values)]


def criteria(**given) -> dict:
    return {"TuningJobCompletionCriteria": given}


def test_without_criteria_nothing_ends_the_search_early_but_the_run_is_counted():
    outcome = completion.evaluate({}, True, 10, scored(0.5, 0.9, 0.905, 0.3))
    assert outcome == completion.Outcome(met=False, not_improving=2, converged_at=None)


def test_a_target_is_met_once_reached_in_the_objectives_direction():
    assert completion.evaluate(criteria(TargetObjectiveMetricValue=0.9), True, 10, scored(0.5, 0.9)).met
    assert not completion.evaluate(criteria(TargetObjectiveMetricValue=0.9), True, 10, scored(0.5, 0.89)).met
    assert completion.evaluate(criteria(TargetObjectiveMetricValue=0.1), False, 10, scored(0.5, 0.05)).met
    assert not completion.evaluate(criteria(TargetObjectiveMetricValue=0.1), False, 10, scored(0.5, 0.2)).met


def test_jobs_improving_the_best_by_less_than_one_percent_count_as_not_improving():
    given = criteria(BestObjectiveNotImproving={"MaxNumberOfTrainingJobsNotImproving": 3})
    # 1.0 then 1.005 (0.5% better), 0.2, 0.9: three in a row not improving.
    outcome = completion.evaluate(given, True, 10, scored(1.0, 1.005, 0.2, 0.9))
    assert outcome.met and outcome.not_improving == 3
    # 1.02 is 2% better: the run starts again.
    outcome = completion.evaluate(given, True, 10, scored(1.0, 0.2, 1.02, 0.9))
    assert not outcome.met and outcome.not_improving == 1


def test_a_criterion_met_once_stays_met_when_a_later_job_improves():
    given = criteria(BestObjectiveNotImproving={"MaxNumberOfTrainingJobsNotImproving": 3})
    assert completion.evaluate(given, False, 10, scored(1.0, 2.0, 3.0, 4.0, 0.1)).met


def test_convergence_is_detected_after_the_window_and_ends_the_search_only_when_enabled():
    values = scored(5.0, 4.0, 4.5, 4.2, 4.1, 4.3, 4.9)  # 4.0 then five not improving
    assert completion.convergence_window(10) == 5 and completion.convergence_window(40) == 10
    detected = completion.evaluate({}, False, 10, values)
    assert detected.converged_at == values[6][0] and not detected.met
    enabled = criteria(ConvergenceDetected={"CompleteOnConvergence": "Enabled"})
    assert completion.evaluate(enabled, False, 10, values).met
    assert not completion.evaluate(enabled, False, 10, values[:6]).met
    assert completion.evaluate(enabled, False, 40, values).converged_at is None
