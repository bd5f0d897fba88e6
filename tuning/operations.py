"""SageMaker hyperparameter tuning operations: validate (the shape already is, by the protocol
layer), delegate."""
from protocol.context import RequestContext
from protocol.registry import operation
from tuning import presenters, services


@operation("CreateHyperParameterTuningJob")
def create_tuning_job(ctx: RequestContext, params: dict) -> dict:
    return {"HyperParameterTuningJobArn": services.create_tuning_job(ctx, params).arn}


@operation("DescribeHyperParameterTuningJob")
def describe_tuning_job(ctx: RequestContext, params: dict) -> dict:
    job = services.get_tuning_job(ctx, params["HyperParameterTuningJobName"])
    return presenters.describe_tuning_job(job)


@operation("StopHyperParameterTuningJob")
def stop_tuning_job(ctx: RequestContext, params: dict) -> dict:
    services.stop_tuning_job(ctx, params["HyperParameterTuningJobName"])
    return {}


@operation("ListHyperParameterTuningJobs")
def list_tuning_jobs(ctx: RequestContext, params: dict) -> dict:
    jobs, next_token = services.list_tuning_jobs(ctx, params)
    return {
        "HyperParameterTuningJobSummaries": [presenters.tuning_job_summary(job) for job in jobs],
        "NextToken": next_token,
    }


@operation("ListTrainingJobsForHyperParameterTuningJob")
def list_training_jobs_for_tuning_job(ctx: RequestContext, params: dict) -> dict:
    job = services.get_tuning_job(ctx, params["HyperParameterTuningJobName"])
    found, next_token = services.list_trials(job, params)
    return {
        "TrainingJobSummaries": [presenters.training_job_summary(job, trial) for trial in found],
        "NextToken": next_token,
    }
