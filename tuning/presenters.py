"""Response bodies for tuning jobs, built explicitly from the rows (no reflection)."""
from django.utils import timezone

from tuning import budget, completion, definitions, warm_start
from tuning import trials as t
from tuning.models import HyperParameterTuningJob


def describe_tuning_job(job: HyperParameterTuningJob) -> dict:
    found = t.trials_of(job)
    best = t.best(found, t.objective_type(job))
    body = dict(job.request)
    body.update(
        HyperParameterTuningJobArn=job.arn,
        HyperParameterTuningJobStatus=job.status,
        CreationTime=job.creation_time,
        HyperParameterTuningEndTime=job.end_time,
        LastModifiedTime=job.last_modified_time,
        TrainingJobStatusCounters=t.status_counters(found),
        ObjectiveStatusCounters=t.objective_counters(found),
        BestTrainingJob=training_job_summary(job, best) if best else None,
        OverallBestTrainingJob=_overall_best(job, found),
        FailureReason=job.failure_reason or None,
        ConsumedResources={"RuntimeInSeconds": _runtime_seconds(job)},
        TuningJobCompletionDetails=_completion_details(job, found),
    )
    return body


def _completion_details(job: HyperParameterTuningJob, found: list[t.Trial]) -> dict:
    """TuningJobCompletionDetails, by tuning/completion.py's rules."""
    config = job.request["HyperParameterTuningJobConfig"]
    planned = sum(budget.quotas(definitions.of(job.request)))
    maximize = t.objective_type(job) == "Maximize"
    outcome = completion.evaluate(config, maximize, planned, t.scored_in_end_order(found))
    details = {"NumberOfTrainingJobsObjectiveNotImproving": outcome.not_improving}
    if outcome.converged_at is not None:
        details["ConvergenceDetectedTime"] = outcome.converged_at
    return details


def _overall_best(job: HyperParameterTuningJob, found: list[t.Trial]) -> dict | None:
    best = warm_start.overall_best(job, found)
    return training_job_summary(*best) if best else None


def _runtime_seconds(job: HyperParameterTuningJob) -> int:
    end = job.end_time or timezone.now()
    return max(0, round((end - job.creation_time).total_seconds()))


def tuning_job_summary(job: HyperParameterTuningJob) -> dict:
    found = t.trials_of(job)
    config = job.request["HyperParameterTuningJobConfig"]
    return {
        "HyperParameterTuningJobName": job.name,
        "HyperParameterTuningJobArn": job.arn,
        "HyperParameterTuningJobStatus": job.status,
        "Strategy": config["Strategy"],
        "CreationTime": job.creation_time,
        "HyperParameterTuningEndTime": job.end_time,
        "LastModifiedTime": job.last_modified_time,
        "TrainingJobStatusCounters": t.status_counters(found),
        "ObjectiveStatusCounters": t.objective_counters(found),
        "ResourceLimits": config["ResourceLimits"],
    }


def training_job_summary(job: HyperParameterTuningJob, trial: t.Trial) -> dict:
    """HyperParameterTrainingJobSummary of a training job already created."""
    objective = t.objective_of(job, trial.row.definition_name)
    training = trial.job
    body = {
        "TrainingJobDefinitionName": trial.row.definition_name or None,
        "TrainingJobName": training.training_job_name,
        "TrainingJobArn": training.training_job_arn,
        "TuningJobName": job.name,
        "CreationTime": training.creation_time,
        "TrainingStartTime": training.training_start_time,
        "TrainingEndTime": training.training_end_time,
        "TrainingJobStatus": training.training_job_status,
        "TunedHyperParameters": trial.row.tuned_hyperparameters,
        "FailureReason": training.failure_reason or None,
        "ObjectiveStatus": trial.objective_status,
    }
    if trial.objective is not None:
        body["FinalHyperParameterTuningJobObjectiveMetric"] = {
            "Type": objective["Type"], "MetricName": objective["MetricName"], "Value": trial.objective,
        }
    return body
