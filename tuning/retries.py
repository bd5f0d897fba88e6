"""Which of a tuning job's training jobs the tuning job retries, and which it no longer counts as
the result of their hyperparameters.

SageMaker: a failed training job "can be retried only if it failed because an internal service
error occurred" (TrainingJobStatusCounters.RetryableError), and "the SageMaker hyperparameter
tuning job already conducts retries internally" (pipelines-retry-policy). It documents neither
how often nor how the retry shows; Sageport's rule (docs/tuning.md, "Retries"):

- a training job that failed with an internal error (FailureReason `InternalServerError: ...`,
  after its own RetryStrategy, if any, was used up) is retried by a new training job with the same
  number and hyperparameters, named `<tuning job>-NNN-<8 new hex>`, up to MAX_RETRIES times per
  number; any other failure (the algorithm's, a ClientError) never is;
- a retry replaces the attempt it retries: it takes no share of MaxNumberOfTrainingJobs (which
  counts hyperparameter sets), takes a place of MaxParallelTrainingJobs while it runs, and the
  failed attempt is no observation of any search;
- every attempt stays a training job of the tuning job: ListTrainingJobsForHyperParameterTuningJob
  lists it, the counters count it (the failed attempt as RetryableError and, its objective never
  evaluated, as ObjectiveStatusCounters.Failed); Hyperband judges a number by its latest attempt
  (tuning/reconciler.py), and no search's history holds a failed attempt (tuning/strategies.py).

Whether a number is due a retry follows from the rows and the training jobs alone: the latest
attempt of a number failed internally and has attempts left, so a step run twice records it
once (the attempt number is unique per number)."""
from tuning import trials as t

# Retries of one number: with its first attempt, three training jobs at most per hyperparameter set.
MAX_RETRIES = 2


def due(found: list[t.Trial]) -> list[t.Trial]:
    """The attempts to retry now, by number: the latest attempt of each number, when it failed
    with an internal error and its number has retries left."""
    return [trial for trial in latest(found)
            if t.failed_internally(trial) and trial.row.attempt < MAX_RETRIES]


def latest(found: list[t.Trial]) -> list[t.Trial]:
    """The latest attempt of each number, by number."""
    by_number = {}
    for trial in sorted(found, key=lambda trial: (trial.row.number, trial.row.attempt)):
        by_number[trial.row.number] = trial
    return list(by_number.values())

