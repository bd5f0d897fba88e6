"""SageMaker processing-job operations: validate (the shape already is, by the protocol layer),
delegate."""
from processing import presenters, services
from protocol.context import RequestContext
from protocol.registry import operation


@operation("CreateProcessingJob")
def create_processing_job(ctx: RequestContext, params: dict) -> dict:
    job = services.create_processing_job(ctx, params)
    return {"ProcessingJobArn": job.processing_job_arn}


@operation("DescribeProcessingJob")
def describe_processing_job(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_processing_job(services.get_processing_job(ctx, params["ProcessingJobName"]))


@operation("StopProcessingJob")
def stop_processing_job(ctx: RequestContext, params: dict) -> dict:
    services.stop_processing_job(ctx, params["ProcessingJobName"])
    return {}


@operation("ListProcessingJobs")
def list_processing_jobs(ctx: RequestContext, params: dict) -> dict:
    jobs, next_token = services.list_processing_jobs(ctx, params)
    return {
        "ProcessingJobSummaries": [presenters.processing_job_summary(job) for job in jobs],
        "NextToken": next_token,
    }
