"""Response bodies for training jobs, built explicitly from the row (no reflection)."""
from datetime import UTC, datetime

from training.metrics import final_metric_data
from training.models import TrainingJob
from training.transitions import history


def output_base_uri(job: TrainingJob) -> str:
    """`<S3OutputPath>/<job>/output`, where SageMaker puts a job's artifacts."""
    return f"{job.request['OutputDataConfig']['S3OutputPath'].rstrip('/')}/{job.training_job_name}/output"


def model_artifacts_uri(job: TrainingJob) -> str:
    if job.request["OutputDataConfig"].get("CompressionType") == "NONE":
        return f"{output_base_uri(job)}/model/"
    return f"{output_base_uri(job)}/model.tar.gz"


def _seconds_between(start, end) -> int | None:
    if start is None or end is None:
        return None
    return max(1, round((end - start).total_seconds()))


DEFAULTED_FLAGS = (
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining",
)


def with_describe_defaults(request: dict) -> dict:
    """Members SageMaker's DescribeTrainingJob returns although nobody set them, as it returns
    them (SDK v2's `Estimator.attach` reads `OutputDataConfig.KmsKeyId` unguarded). Applied when
    presenting, so that jobs stored before a default was added show it too."""
    body = dict(request)
    body["AlgorithmSpecification"] = {
        "EnableSageMakerMetricsTimeSeries": False,
        **request["AlgorithmSpecification"],
    }
    body["OutputDataConfig"] = {"KmsKeyId": "", "CompressionType": "GZIP", **request["OutputDataConfig"]}
    for flag in DEFAULTED_FLAGS:
        body.setdefault(flag, False)
    body["ProfilingStatus"] = _profiling_status(request)
    return body


def _profiling_status(request: dict) -> str:
    """`Enabled` only when a ProfilerConfig asks for profiling (nothing runs it here either way)."""
    config = request.get("ProfilerConfig")
    return "Enabled" if config is not None and not config.get("DisableProfiler", False) else "Disabled"


def describe_training_job(job: TrainingJob) -> dict:
    body = with_describe_defaults(job.request)
    training_seconds = _seconds_between(job.training_start_time, job.training_end_time)
    body.update(
        TrainingJobArn=job.training_job_arn,
        ModelArtifacts={"S3ModelArtifacts": model_artifacts_uri(job)},
        TrainingJobStatus=job.training_job_status,
        SecondaryStatus=job.secondary_status,
        FailureReason=job.failure_reason or None,
        CreationTime=job.creation_time,
        LastModifiedTime=job.last_modified_time,
        TrainingStartTime=job.training_start_time,
        TrainingEndTime=job.training_end_time,
        TrainingTimeInSeconds=training_seconds,
        BillableTimeInSeconds=training_seconds,
        FinalMetricDataList=_final_metric_data_list(job),
        SecondaryStatusTransitions=[
            {
                "Status": row.status,
                "StartTime": row.start_time,
                "EndTime": row.end_time,
                "StatusMessage": row.status_message or None,
            }
            for row in history(job)
        ],
    )
    return body


def _final_metric_data_list(job: TrainingJob) -> list[dict] | None:
    """The last value of each metric the job's MetricDefinitions matched; absent when none did."""
    data = [
        {
            "MetricName": datum.metric_name,
            "Value": datum.value,
            "Timestamp": datetime.fromtimestamp(datum.timestamp_ms / 1000, UTC),
        }
        for datum in final_metric_data(job)
    ]
    return data or None


def training_job_summary(job: TrainingJob) -> dict:
    return {
        "TrainingJobName": job.training_job_name,
        "TrainingJobArn": job.training_job_arn,
        "CreationTime": job.creation_time,
        "TrainingEndTime": job.training_end_time,
        "LastModifiedTime": job.last_modified_time,
        "TrainingJobStatus": job.training_job_status,
        "SecondaryStatus": job.secondary_status,
    }
