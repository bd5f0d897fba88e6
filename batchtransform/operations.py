"""SageMaker transform-job operations: validate (the protocol layer did the shape), delegate."""

from batchtransform import presenters, services
from protocol.context import RequestContext
from protocol.registry import operation


@operation("CreateTransformJob")
def create_transform_job(ctx: RequestContext, params: dict) -> dict:
    job = services.create_transform_job(ctx, params)
    return {"TransformJobArn": job.transform_job_arn}


@operation("DescribeTransformJob")
def describe_transform_job(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_transform_job(services.get_transform_job(ctx, params["TransformJobName"]))


@operation("StopTransformJob")
def stop_transform_job(ctx: RequestContext, params: dict) -> dict:
    services.stop_transform_job(ctx, params["TransformJobName"])
    return {}


@operation("ListTransformJobs")
def list_transform_jobs(ctx: RequestContext, params: dict) -> dict:
    jobs, next_token = services.list_transform_jobs(ctx, params)
    return {
        "TransformJobSummaries": [presenters.transform_job_summary(job) for job in jobs],
        "NextToken": next_token,
    }
