"""A tuning job's retries of training jobs that failed with an internal error (tuning/retries.py),
over real rows: the same number and hyperparameters under a new name, bounded, within
MaxParallelTrainingJobs, outside MaxNumberOfTrainingJobs, recorded once whatever the steps, and
never for the algorithm's or the client's failures."""
import re

import pytest

from tests.unit.tuning.helpers import CTX, create, end, report, step, trainings
from tuning import definitions, reconciler, retries, services
from tuning import trials as t
from tuning.models import TuningTrainingJob
from tuning.presenters import describe_tuning_job

INTERNAL = "InternalServerError: the container of algo-1 disappeared from the Docker engine."


def rows(job) -> list[tuple[int, int]]:
    return list(TuningTrainingJob.objects.filter(tuning_job=job).values_list("number", "attempt"))


def test_an_internal_failure_is_retried_with_the_same_hyperparameters_outside_the_budget(db):
    job = step(create("retry", maximum=2, parallel=1))
    [first] = trainings(job)
    end(first, None, status="Failed", reason=INTERNAL)
    job = step(job)

    failed, retry = trainings(job)
    assert re.fullmatch(r"retry-001-[0-9a-f]{8}", retry.training_job_name)
    assert retry.training_job_name != failed.training_job_name
    assert retry.request["HyperParameters"] == failed.request["HyperParameters"]
    assert rows(job) == [(1, 0), (1, 1)]  # the retry holds the only place (parallel 1)

    end(retry, 0.7)
    job = step(job)
    prefixes = [training.training_job_name[:9] for training in trainings(job)]
    assert prefixes == ["retry-001", "retry-001", "retry-002"]
    end(trainings(job)[2], 0.4)
    job = step(job)

    assert job.status == "Completed"
    answer = describe_tuning_job(services.get_tuning_job(CTX, "retry"))
    assert answer["BestTrainingJob"]["TrainingJobName"] == retry.training_job_name
    assert answer["TrainingJobStatusCounters"] == {
        "Completed": 2, "InProgress": 0, "RetryableError": 1, "NonRetryableError": 0, "Stopped": 0,
    }
    assert answer["ObjectiveStatusCounters"] == {"Succeeded": 2, "Pending": 0, "Failed": 1}
    listed, _ = services.list_trials(job, {})  # both attempts are training jobs of the tuning job
    names = [training.training_job_name for training in trainings(job)]
    assert sorted(trial.job.training_job_name for trial in listed) == sorted(names)


@pytest.mark.parametrize("reason", [
    "AlgorithmError: the algorithm exited with status 1.",
    "ClientError: the training image algo:1 does not exist.",
])
def test_a_failure_not_internal_is_never_retried(db, reason):
    job = step(create("noretry", maximum=1, parallel=1))
    end(trainings(job)[0], None, status="Failed", reason=reason)
    job = step(step(job))

    assert job.status == "Failed"
    assert len(trainings(job)) == 1
    assert describe_tuning_job(job)["TrainingJobStatusCounters"]["NonRetryableError"] == 1


def test_retries_are_bounded_then_the_search_ends_with_what_it_has(db):
    job = step(create("bounded", maximum=1, parallel=1))
    for _ in range(retries.MAX_RETRIES + 1):
        end(trainings(job)[-1], None, status="Failed", reason=INTERNAL)
        job = step(job)

    assert len(trainings(job)) == 1 + retries.MAX_RETRIES
    assert job.status == "Failed"
    assert "3 of 3 training jobs failed" in job.failure_reason
    assert describe_tuning_job(job)["TrainingJobStatusCounters"]["RetryableError"] == 3


def test_a_retry_takes_a_place_of_max_parallel_training_jobs(db):
    job = step(create("places", maximum=3, parallel=2))
    first, second = trainings(job)
    end(first, None, status="Failed", reason=INTERNAL)
    job = step(job)

    assert rows(job) == [(1, 0), (1, 1), (2, 0)]  # the retry, not number 3: two run
    end(second, 0.5)
    job = step(job)
    assert rows(job) == [(1, 0), (1, 1), (2, 0), (3, 0)]
    assert sum(trial.running for trial in t.trials_of(job)) == 2


def test_a_retry_is_recorded_once_and_created_after_a_crash_before_its_creation(db, monkeypatch):
    job = step(create("crash", maximum=1, parallel=1))
    end(trainings(job)[0], None, status="Failed", reason=INTERNAL)
    # The worker dies between recording the retry and creating its training job.
    monkeypatch.setattr(reconciler, "_launch", lambda job, row: None)
    job = step(job)
    assert rows(job) == [(1, 0), (1, 1)] and len(trainings(job)) == 1
    monkeypatch.undo()

    job = step(step(job))
    assert rows(job) == [(1, 0), (1, 1)]
    assert len(trainings(job)) == 2


def test_no_search_learns_from_a_failed_attempt(db):
    """A failed attempt is neither a finished nor a running point of its definition's history; its
    retry runs in its place."""
    job = step(create("history", maximum=2, parallel=1, Strategy="Bayesian"))
    end(trainings(job)[0], 0.9, status="Failed", reason=INTERNAL)  # printed a value, then failed
    job = step(job)

    found = t.trials_of(job)
    [definition] = definitions.of(job.request)
    history = reconciler._history(definition, found)
    assert history.finished == []
    assert history.running == [found[1].row.tuned_hyperparameters]
    assert found[1].row.tuned_hyperparameters == found[0].row.tuned_hyperparameters


def test_hyperband_judges_a_number_by_its_retry_alone(db):
    """The failed attempt's values weigh nothing: the retry, worse than them, is the only training
    job of its bracket so far and goes on (study `hb` places jobs 1 and 2 in one bracket, where the
    worse is stopped: tests/unit/tuning/test_hyperband.py)."""
    job = step(create("hb", maximum=2, parallel=1, Strategy="Hyperband",
                      StrategyConfig={"HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": 2}}))
    failed = trainings(job)[0]
    report(failed, (1000, 0.9))
    end(failed, None, status="Failed", reason=INTERNAL)
    job = step(job)
    retry = trainings(job)[1]
    report(retry, (2000, 0.5))
    job = step(job)

    assert trainings(job)[1].training_job_status == "InProgress"
    assert rows(job) == [(1, 0), (1, 1)]
