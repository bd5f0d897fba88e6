"""Response bodies for processing jobs, built explicitly from the row (no reflection)."""
from processing.models import ProcessingJob


def describe_processing_job(job: ProcessingJob) -> dict:
    body = dict(job.request)
    body.update(
        ProcessingJobArn=job.processing_job_arn,
        ProcessingJobStatus=job.processing_job_status,
        ExitMessage=job.exit_message or None,
        FailureReason=job.failure_reason or None,
        ProcessingStartTime=job.processing_start_time,
        ProcessingEndTime=job.processing_end_time,
        LastModifiedTime=job.last_modified_time,
        CreationTime=job.creation_time,
    )
    return body


def processing_job_summary(job: ProcessingJob) -> dict:
    return {
        "ProcessingJobName": job.processing_job_name,
        "ProcessingJobArn": job.processing_job_arn,
        "CreationTime": job.creation_time,
        "ProcessingEndTime": job.processing_end_time,
        "LastModifiedTime": job.last_modified_time,
        "ProcessingJobStatus": job.processing_job_status,
        "FailureReason": job.failure_reason or None,
        "ExitMessage": job.exit_message or None,
    }
