"""What a tuning job's training jobs are now: each one's status and objective, read from the
training feature (its services and metrics, never its tables), and what the tuning job's
Describe and its reconciler derive from them (counters, the best training job)."""
from collections import Counter
from dataclasses import dataclass

from training import metrics
from training import services as training
from training.models import TrainingJob, TrainingJobStatus
from tuning import definitions
from tuning.models import HyperParameterTuningJob, TuningTrainingJob

SUCCEEDED, PENDING, FAILED = "Succeeded", "Pending", "Failed"
# A training job that failed on the platform's side (SageMaker: "an internal service error") counts
# as RetryableError; any other failure (the algorithm's, a client error) as NonRetryableError.
INTERNAL_FAILURE_PREFIX = "InternalServerError"
STATUS_COUNTERS = ("Completed", "InProgress", "RetryableError", "NonRetryableError", "Stopped")


@dataclass(frozen=True)
class Trial:
    row: TuningTrainingJob
    job: TrainingJob | None  # None: not created yet
    objective: float | None  # the objective metric's final value, once reported

    @property
    def running(self) -> bool:
        """Counts against MaxParallelTrainingJobs: created or about to be, and not ended."""
        return self.job is None or not self.job.is_terminal

    @property
    def objective_status(self) -> str:
        """Succeeded: ended with a value of the objective; Failed: ended without one; else Pending."""
        if self.running:
            return PENDING
        ended_well = self.job.training_job_status in (TrainingJobStatus.COMPLETED, TrainingJobStatus.STOPPED)
        return SUCCEEDED if ended_well and self.objective is not None else FAILED


def trials_of(tuning_job: HyperParameterTuningJob) -> list[Trial]:
    rows = list(tuning_job.trials.all())
    names = [row.training_job_name for row in rows]
    jobs = training.training_jobs_named(tuning_job.account_id, tuning_job.region, names)
    metrics_by_definition = {
        definition.name: definition.objective["MetricName"]
        for definition in definitions.of(tuning_job.request)
    }
    return [
        Trial(row, jobs.get(row.training_job_name),
              _objective(jobs.get(row.training_job_name), metrics_by_definition[row.definition_name]))
        for row in rows
    ]


def objective_of(tuning_job: HyperParameterTuningJob, definition_name: str = definitions.LONE) -> dict:
    """The objective (Type, MetricName) of a definition's training jobs."""
    return definitions.named(tuning_job.request, definition_name).objective


def objective_type(tuning_job: HyperParameterTuningJob) -> str:
    return definitions.objective_type(tuning_job.request)


def _objective(job: TrainingJob | None, metric: str) -> float | None:
    """The objective of an ended training job (one still running has no final value yet)."""
    if job is None or not job.is_terminal:
        return None
    values = [datum.value for datum in metrics.final_metric_data(job) if datum.metric_name == metric]
    return values[0] if values else None


def objective_points(tuning_job: HyperParameterTuningJob, trial: Trial,
                     limit: int) -> list[tuple[int, float]]:
    """The first `limit` values of the objective a training job printed so far (timestamp in ms,
    value), oldest first: one per resource unit, as the Hyperband search reads them."""
    if trial.job is None:
        return []
    metric = objective_of(tuning_job, trial.row.definition_name)["MetricName"]
    points = metrics.metric_points(trial.job, metric, limit)
    return [(point.timestamp_ms, point.value) for point in points]


def status_counters(trials: list[Trial]) -> dict:
    """TrainingJobStatusCounters: a training job still to be created counts as InProgress."""
    counts = Counter(_status_counter(trial) for trial in trials)
    return {name: counts[name] for name in STATUS_COUNTERS}


def _status_counter(trial: Trial) -> str:
    if trial.running:
        return "InProgress"
    status = trial.job.training_job_status
    if status == TrainingJobStatus.FAILED:
        return "RetryableError" if failed_internally(trial) else "NonRetryableError"
    return status


def failed_internally(trial: Trial) -> bool:
    """Failed on the platform's side: a RetryableError, which tuning/retries.py retries."""
    job = trial.job
    return (job is not None and job.training_job_status == TrainingJobStatus.FAILED
            and job.failure_reason.startswith(INTERNAL_FAILURE_PREFIX))


def scored_in_end_order(trials: list[Trial]) -> list[tuple]:
    """(end time, objective) of the training jobs that reported the objective, in the order they
    ended (then by number): what tuning/completion.py reads."""
    scored = sorted(
        (_ended(trial), trial.row.number, trial.objective)
        for trial in trials if trial.objective_status == SUCCEEDED
    )
    return [(ended, objective) for ended, _, objective in scored]


def _ended(trial: Trial):
    return trial.job.training_end_time or trial.job.last_modified_time


def objective_counters(trials: list[Trial]) -> dict:
    counts = Counter(trial.objective_status for trial in trials)
    return {name: counts[name] for name in (SUCCEEDED, PENDING, FAILED)}


def best(trials: list[Trial], objective_type: str) -> Trial | None:
    """The training job with the best objective (Maximize: the largest; Minimize: the smallest),
    whatever its definition (all their objectives are of one Type); on a tie, the earliest."""
    scored = [trial for trial in trials if trial.objective_status == SUCCEEDED]
    if not scored:
        return None
    sign = -1 if objective_type == "Maximize" else 1
    return min(scored, key=lambda trial: (sign * trial.objective, trial.row.number))
