"""What Describe derives from the training jobs: BestTrainingJob by the objective's Type, the
status and objective counters (botocore's TrainingJobStatusCounters: RetryableError for "an
internal service error", NonRetryableError for a client error; ObjectiveStatusCounters: Failed when
"the training job failed or did not emit an objective metric")."""
from types import SimpleNamespace

from tuning.trials import Trial, best, objective_counters, status_counters

TERMINAL = {"Completed", "Failed", "Stopped"}


def trial(number: int, status: str | None, objective: float | None = None, reason: str = "") -> Trial:
    job = None if status is None else SimpleNamespace(
        training_job_status=status, is_terminal=status in TERMINAL, failure_reason=reason
    )
    return Trial(SimpleNamespace(number=number), job, objective)


TRIALS = [
    trial(1, "Completed", 0.5),
    trial(2, "Completed", 0.2),
    trial(3, "Completed", 0.9),
    trial(4, "Failed", reason="AlgorithmError: exit 1"),
    trial(5, "Failed", reason="InternalServerError: the engine went away"),
    trial(6, "Completed"),  # never printed its objective
    trial(7, "InProgress"),
    trial(8, None),  # recorded, not created yet
]


def test_the_best_training_job_follows_the_objective_type_among_those_that_reported_it():
    assert best(TRIALS, "Minimize").row.number == 2
    assert best(TRIALS, "Maximize").row.number == 3


def test_a_tie_goes_to_the_earliest_training_job():
    assert best([trial(1, "Completed", 1.0), trial(2, "Completed", 1.0)], "Minimize").row.number == 1


def test_no_best_training_job_while_none_reported_the_objective():
    assert best([trial(1, "Failed"), trial(2, "InProgress")], "Minimize") is None


def test_the_counters_count_every_training_job_once():
    assert status_counters(TRIALS) == {
        "Completed": 4, "InProgress": 2, "RetryableError": 1, "NonRetryableError": 1, "Stopped": 0,
    }
    assert objective_counters(TRIALS) == {"Succeeded": 3, "Pending": 2, "Failed": 3}
