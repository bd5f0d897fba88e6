"""MetricDefinitions: values read from the container's output, reported in FinalMetricDataList."""
import time
from datetime import UTC, datetime

import pytest

from tests.e2e.conftest import shell_job, unique_name, wait_for_status

GROUP = "/aws/sagemaker/TrainingJobs"
METRICS = [
    {"Name": "train:loss", "Regex": r"loss=([0-9.]+)"},
    {"Name": "validation:accuracy", "Regex": r"acc=([0-9.]+)"},
    {"Name": "never:printed", "Regex": r"never=([0-9.]+)"},
]


@pytest.fixture(scope="module")
def logs(stack):
    return stack.client("logs")


def metric_job(name: str, image: str, bucket: str, script: str) -> dict:
    request = shell_job(name, image, bucket, script)
    request["AlgorithmSpecification"]["MetricDefinitions"] = METRICS
    return request


def printed_lines(logs, name: str) -> list[tuple[str, datetime]]:
    """The lines of the job's single stream and when each was printed, as the logs API says."""
    (stream,) = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{name}/")["logStreams"]
    stream_name = stream["logStreamName"]
    events = logs.get_log_events(logGroupName=GROUP, logStreamName=stream_name, startFromHead=True)["events"]
    return [(event["message"], datetime.fromtimestamp(event["timestamp"] / 1000, UTC)) for event in events]


def test_final_metric_data_is_the_last_value_of_each_metric_at_the_time_of_its_line(
    sagemaker, logs, bucket, shell_algo_image
):
    name = unique_name("metrics")
    script = (
        "echo 'epoch 1 loss=0.9 acc=0.5'; sleep 0.2; echo 'epoch 2 loss=0.4'; sleep 0.2; "
        "echo 'epoch 3 loss=0.125 acc=0.75'; sleep 0.2; echo 'loss=unreadable'; echo done"
    )
    sagemaker.create_training_job(**metric_job(name, shell_algo_image, bucket, script))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    printed_at = dict(printed_lines(logs, name))["epoch 3 loss=0.125 acc=0.75"]
    assert job["FinalMetricDataList"] == [
        {"MetricName": "train:loss", "Value": 0.125, "Timestamp": printed_at},
        {"MetricName": "validation:accuracy", "Value": 0.75, "Timestamp": printed_at},
    ]
    assert job["AlgorithmSpecification"]["MetricDefinitions"] == METRICS


def test_a_job_without_metric_definitions_reports_no_metrics(sagemaker, bucket, shell_algo_image):
    name = unique_name("nometrics")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "echo loss=0.5"))

    job = wait_for_status(sagemaker, name)
    assert job["TrainingJobStatus"] == "Completed" and "FinalMetricDataList" not in job


def test_an_invalid_metric_regex_is_refused_and_creates_nothing(sagemaker, bucket, shell_algo_image):
    name = unique_name("badregex")
    request = shell_job(name, shell_algo_image, bucket, "echo never runs")
    request["AlgorithmSpecification"]["MetricDefinitions"] = [{"Name": "loss", "Regex": "loss=([0-9."}]

    with pytest.raises(sagemaker.exceptions.ClientError) as raised:
        sagemaker.create_training_job(**request)
    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert "MetricDefinitions regex for metric 'loss' is invalid" in raised.value.response["Error"]["Message"]
    with pytest.raises(sagemaker.exceptions.ClientError) as missing:
        sagemaker.describe_training_job(TrainingJobName=name)
    assert missing.value.response["Error"]["Message"] == "Requested resource not found."


def test_a_worker_killed_mid_job_neither_loses_nor_repeats_log_lines_or_metrics(
    stack, sagemaker, logs, bucket, shell_algo_image
):
    name = unique_name("metriccrash")
    script = "for step in 1 2 3 4 5 6 7 8; do echo \"step $step loss=0.$step\"; sleep 0.5; done"
    sagemaker.create_training_job(**metric_job(name, shell_algo_image, bucket, script))
    wait_for_status(sagemaker, name, statuses={"Training"})
    time.sleep(1)  # some lines are collected before the crash, the others after the restart

    stack.kill_worker()
    try:
        time.sleep(2)
    finally:
        stack.start_worker()
    job = wait_for_status(sagemaker, name, timeout=120)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    lines = printed_lines(logs, name)
    assert [message for message, _ in lines] == [f"step {step} loss=0.{step}" for step in range(1, 9)]
    last_loss = {"MetricName": "train:loss", "Value": 0.8, "Timestamp": lines[-1][1]}
    assert job["FinalMetricDataList"] == [last_loss]
