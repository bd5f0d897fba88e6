"""SageMaker training-job operations: validate (already done by the protocol layer), delegate."""

from protocol.context import RequestContext
from protocol.registry import operation
from training import presenters, services


@operation("CreateTrainingJob")
def create_training_job(ctx: RequestContext, params: dict) -> dict:
    job = services.create_training_job(ctx, params)
    return {"TrainingJobArn": job.training_job_arn}


@operation("DescribeTrainingJob")
def describe_training_job(ctx: RequestContext, params: dict) -> dict:
    job = services.get_training_job(ctx, params["TrainingJobName"])
    return presenters.describe_training_job(job)


@operation("StopTrainingJob")
def stop_training_job(ctx: RequestContext, params: dict) -> dict:
    services.stop_training_job(ctx, params["TrainingJobName"])
    return {}


@operation("ListTrainingJobs")
def list_training_jobs(ctx: RequestContext, params: dict) -> dict:
    jobs, next_token = services.list_training_jobs(ctx, params)
    return {
        "TrainingJobSummaries": [presenters.training_job_summary(job) for job in jobs],
        "NextToken": next_token,
    }
