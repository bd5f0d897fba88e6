"""Response bodies for transform jobs, built explicitly from the row (no reflection)."""

from batchtransform.models import TransformJob

# Members DescribeTransformJob returns although the request left them out, as SageMaker fills
# them (API reference, CreateTransformJob: BatchStrategy and MaxPayloadInMB defaults; the SDK's
# Transformer.attach reads them).
REQUEST_MEMBERS = (
    "ModelName",
    "MaxConcurrentTransforms",
    "ModelClientConfig",
    "MaxPayloadInMB",
    "BatchStrategy",
    "Environment",
    "TransformInput",
    "TransformOutput",
    "TransformResources",
    "DataProcessing",
    "ExperimentConfig",
)


def describe_transform_job(job: TransformJob) -> dict:
    body = {member: job.request[member] for member in REQUEST_MEMBERS if member in job.request}
    body.update(
        TransformJobName=job.transform_job_name,
        TransformJobArn=job.transform_job_arn,
        TransformJobStatus=job.transform_job_status,
        FailureReason=job.failure_reason or None,
        CreationTime=job.creation_time,
        TransformStartTime=job.transform_start_time,
        TransformEndTime=job.transform_end_time,
    )
    return body


def transform_job_summary(job: TransformJob) -> dict:
    return {
        "TransformJobName": job.transform_job_name,
        "TransformJobArn": job.transform_job_arn,
        "CreationTime": job.creation_time,
        "TransformEndTime": job.transform_end_time,
        "LastModifiedTime": job.last_modified_time,
        "TransformJobStatus": job.transform_job_status,
        "FailureReason": job.failure_reason or None,
    }
