"""A tuning job retries a training job that failed with an internal error (docs/tuning.md,
"Retries"), on the shell image (tests/e2e/test_tuning_jobs.py's SCRIPT prints
`validation:loss=(depth - 3)^2`).

The internal error is a real one: the first training job's container is removed from the Docker
engine while it runs, which fails it with `InternalServerError: the container of algo-1
disappeared from the Docker engine.` (as tests/e2e/test_training_gpus.py shows for a training
job alone). The first attempt waits for a file its retry finds: the test uploads it to the input
channel once the first attempt's container runs (its input already staged), so only the retry,
staged later, sees it and finishes at once.

AWS behaviour checked: TrainingJobStatusCounters.RetryableError counts the failed training job
("can be retried only if it failed because an internal service error occurred"); the tuning job
retries it ("the SageMaker hyperparameter tuning job already conducts retries internally",
pipelines-retry-policy) and completes with the retry's result; the shapes are botocore's."""
import re
import time

from tests.e2e.conftest import unique_name
from tests.e2e.test_tuning_jobs import (
    SCRIPT,
    most_at_once,
    training_container,
    tuning_request,
    wait_for_tuning,
)

WAITS_FOR_ITS_RETRY = "[ -f /opt/ml/input/data/train/go ] || sleep 300; "
VANISHED = "InternalServerError: the container of algo-1 disappeared from the Docker engine."


def running(container, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while container.status != "running":
        assert time.monotonic() < deadline, f"container {container.name} is {container.status}"
        time.sleep(0.1)
        container.reload()
    return container


def first_training_job(sagemaker, name: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while not (found := sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name
    )["TrainingJobSummaries"]):
        assert time.monotonic() < deadline, f"{name} launched no training job within {timeout}s"
        time.sleep(0.3)
    return found[0]


def test_a_training_job_failed_by_an_internal_error_is_retried_and_the_search_completes(
    sagemaker, s3, bucket, shell_algo_image
):
    name = unique_name("retry")
    s3.put_object(Bucket=bucket, Key="retry-data/data.txt", Body=b"rows")
    config = {
        "Strategy": "Random",
        "ResourceLimits": {"MaxNumberOfTrainingJobs": 2, "MaxParallelTrainingJobs": 1},
        "ParameterRanges": {"IntegerParameterRanges": [{"Name": "depth", "MinValue": "1", "MaxValue": "6"}]},
    }
    request = tuning_request(name, shell_algo_image, bucket, config, script=WAITS_FOR_ITS_RETRY + SCRIPT)
    request["TrainingJobDefinition"]["InputDataConfig"] = [{
        "ChannelName": "train",
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/retry-data/"}},
    }]
    sagemaker.create_hyper_parameter_tuning_job(**request)

    first = first_training_job(sagemaker, name)
    container = running(training_container(first["TrainingJobArn"]))
    s3.put_object(Bucket=bucket, Key="retry-data/go", Body=b"")
    container.remove(force=True)
    job = wait_for_tuning(sagemaker, name, timeout=300)

    assert job["HyperParameterTuningJobStatus"] == "Completed", job.get("FailureReason")
    assert job["TrainingJobStatusCounters"] == {
        "Completed": 2, "InProgress": 0, "RetryableError": 1, "NonRetryableError": 0, "Stopped": 0,
    }
    assert job["ObjectiveStatusCounters"] == {"Succeeded": 2, "Pending": 0, "Failed": 1}
    summaries = sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name, SortBy="CreationTime", SortOrder="Ascending"
    )["TrainingJobSummaries"]
    failed, retry, second = summaries
    assert failed["TrainingJobName"] == first["TrainingJobName"]
    assert failed["TrainingJobStatus"] == "Failed"
    assert failed["FailureReason"] == VANISHED
    assert failed["ObjectiveStatus"] == "Failed"
    # The retry: the same number and hyperparameters, a new name; then the budget's second job.
    assert re.fullmatch(rf"{name}-001-[0-9a-f]{{8}}", retry["TrainingJobName"])
    assert retry["TrainingJobName"] != failed["TrainingJobName"]
    assert retry["TunedHyperParameters"] == failed["TunedHyperParameters"]
    depth = int(retry["TunedHyperParameters"]["depth"])
    assert retry["TrainingJobStatus"] == "Completed"
    assert retry["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] == (depth - 3) ** 2
    assert second["TrainingJobName"].startswith(f"{name}-002-")
    best = job["BestTrainingJob"]["TrainingJobName"]
    assert best in (retry["TrainingJobName"], second["TrainingJobName"])
    trainings = [sagemaker.describe_training_job(TrainingJobName=s["TrainingJobName"]) for s in summaries]
    assert most_at_once(trainings) == 1  # MaxParallelTrainingJobs holds with the retry
