"""CloudWatch metrics and log groups against the live stack, with the clients a user has,
configured only by `<data>/env`: boto3's "cloudwatch" client, the SageMaker SDK's
TrainingJobAnalytics, and the AWS CLI."""

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from sagemaker.analytics import TrainingJobAnalytics
from sagemaker.session import Session

from tests.conftest import read_env_file
from tests.e2e.conftest import shell_job, unique_name, wait_for_status
from tests.e2e.hosting import invoke_json, wait_until

pytest_plugins = ["tests.e2e.hosting_fixtures"]

AWS_CLI = Path(sys.executable).with_name("aws")
TRAINING = "/aws/sagemaker/TrainingJobs"
METRICS = [
    {"Name": "train:loss", "Regex": r"loss=([0-9.]+)"},
    {"Name": "validation:accuracy", "Regex": r"acc=([0-9.]+)"},
]


@pytest.fixture
def user_environment(stack, monkeypatch):
    """The process environment a user has after `source <data>/env`, and nothing else of AWS."""
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    variables = read_env_file(stack.data_dir / "env")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return variables


@pytest.fixture
def cloudwatch(user_environment):
    return boto3.session.Session().client("cloudwatch")


def aws(user_environment, *arguments: str) -> dict:
    completed = subprocess.run(
        [str(AWS_CLI), *arguments, "--output", "json"],
        env={**os.environ, **user_environment},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(completed.stdout)


@pytest.fixture(scope="module")
def metric_job(stack, sagemaker, s3, shell_algo_image) -> dict:
    """A completed job that printed one loss and one accuracy on algo-1."""
    bucket = unique_name("cwmetrics")
    s3.create_bucket(Bucket=bucket)
    name = unique_name("cwmetrics")
    request = shell_job(name, shell_algo_image, bucket, "echo 'epoch 1 loss=0.5 acc=0.75'; echo done")
    request["AlgorithmSpecification"]["MetricDefinitions"] = METRICS
    sagemaker.create_training_job(**request)
    job = wait_for_status(sagemaker, name)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    return job


def job_window(job: dict) -> dict:
    return {
        "StartTime": job["TrainingStartTime"] - timedelta(minutes=1),
        "EndTime": job["TrainingEndTime"] + timedelta(minutes=1),
    }


def test_get_metric_statistics_has_the_jobs_metric_per_job_and_per_host(cloudwatch, metric_job):
    name = metric_job["TrainingJobName"]
    for dimension in (
        {"Name": "TrainingJobName", "Value": name},
        {"Name": "Host", "Value": f"{name}/algo-1"},
    ):
        response = cloudwatch.get_metric_statistics(
            Namespace=TRAINING,
            MetricName="train:loss",
            Dimensions=[dimension],
            Period=60,
            Statistics=["Average", "SampleCount"],
            **job_window(metric_job),
        )
        assert [(p["Average"], p["SampleCount"]) for p in response["Datapoints"]] == [(0.5, 1.0)], dimension


def test_list_metrics_and_get_metric_data_find_the_jobs_metrics(cloudwatch, metric_job):
    name = metric_job["TrainingJobName"]
    job_dimension = [{"Name": "TrainingJobName", "Value": name}]

    listed = cloudwatch.list_metrics(Namespace=TRAINING, Dimensions=job_dimension)["Metrics"]
    data = cloudwatch.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "accuracy",
                "MetricStat": {
                    "Metric": {
                        "Namespace": TRAINING,
                        "MetricName": "validation:accuracy",
                        "Dimensions": job_dimension,
                    },
                    "Period": 60,
                    "Stat": "Maximum",
                },
            }
        ],
        **job_window(metric_job),
    )

    assert sorted(metric["MetricName"] for metric in listed) == ["train:loss", "validation:accuracy"]
    (result,) = data["MetricDataResults"]
    assert (result["Values"], result["StatusCode"]) == ([0.75], "Complete")


def test_the_sdks_training_job_analytics_has_the_metric_rows(user_environment, metric_job):
    analytics = TrainingJobAnalytics(metric_job["TrainingJobName"], sagemaker_session=Session())

    frame = analytics.dataframe()

    rows = sorted(zip(frame["metric_name"], frame["value"], frame["timestamp"], strict=True))
    assert rows == [("train:loss", 0.5, 0.0), ("validation:accuracy", 0.75, 0.0)]


def test_endpoint_invocations_are_counted_with_their_errors_and_latencies(
    cloudwatch, user_environment, stack, hosting, probe_image, runtime
):
    name = hosting.probe_endpoint(probe_image)
    started = datetime.now(UTC)
    for _ in range(5):
        invoke_json(runtime, name)
    for status in (400, 400, 500):
        with pytest.raises(ClientError):
            invoke_json(runtime, name, {"status": status, "message": "told to fail"})
    variant = [{"Name": "EndpointName", "Value": name}, {"Name": "VariantName", "Value": "AllTraffic"}]
    window = {
        "StartTime": started - timedelta(minutes=1),
        "EndTime": started + timedelta(minutes=10),
        "Period": 600,
    }

    def total(metric: str, statistic: str = "Sum") -> float:
        response = cloudwatch.get_metric_statistics(
            Namespace="AWS/SageMaker", MetricName=metric, Dimensions=variant, Statistics=[statistic], **window
        )
        return sum(point[statistic] for point in response["Datapoints"])

    # Each API process writes its counts every SAGEPORT_INVOCATION_METRICS_FLUSH_SECONDS (0.5 s here).
    wait_until(lambda: total("Invocations") == 8, timeout=30, what="8 invocations counted")
    assert (total("Invocation4XXErrors"), total("Invocation5XXErrors")) == (2, 1)
    assert total("ModelLatency", "SampleCount") == 8 and total("OverheadLatency", "SampleCount") == 8
    latency = cloudwatch.get_metric_statistics(
        Namespace="AWS/SageMaker",
        MetricName="ModelLatency",
        Dimensions=variant,
        Statistics=["Maximum"],
        **window,
    )
    assert {point["Unit"] for point in latency["Datapoints"]} == {"Microseconds"}
    assert 0 < max(point["Maximum"] for point in latency["Datapoints"]) < 60e6
    for metric in ("ModelLatency", "OverheadLatency"):
        assert_percentiles_lie_within_the_extremes(cloudwatch, metric, variant, window)
    listed = cloudwatch.list_metrics(
        Namespace="AWS/SageMaker", Dimensions=[{"Name": "EndpointName", "Value": name}]
    )
    assert sorted(metric["MetricName"] for metric in listed["Metrics"]) == [
        "Invocation4XXErrors",
        "Invocation5XXErrors",
        "Invocations",
        "ModelLatency",
        "OverheadLatency",
    ]
    cli = aws(
        user_environment,
        "cloudwatch",
        "get-metric-statistics",
        "--namespace",
        "AWS/SageMaker",
        "--metric-name",
        "Invocations",
        "--dimensions",
        f"Name=EndpointName,Value={name}",
        "Name=VariantName,Value=AllTraffic",
        "--statistics",
        "Sum",
        "--period",
        "600",
        "--start-time",
        window["StartTime"].isoformat(),
        "--end-time",
        window["EndTime"].isoformat(),
    )
    assert sum(point["Sum"] for point in cli["Datapoints"]) == 8


def assert_percentiles_lie_within_the_extremes(cloudwatch, metric: str, variant: list, window: dict) -> None:
    """p50 <= p99, both between the period's Minimum and Maximum, and GetMetricData's p99 the same."""
    request = {"Namespace": "AWS/SageMaker", "MetricName": metric, "Dimensions": variant, **window}
    extremes = cloudwatch.get_metric_statistics(**request, Statistics=["Minimum", "Maximum", "SampleCount"])
    percentiles = cloudwatch.get_metric_statistics(**request, ExtendedStatistics=["p50", "p99"])
    data = cloudwatch.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "tail",
                "MetricStat": {
                    "Metric": {"Namespace": "AWS/SageMaker", "MetricName": metric, "Dimensions": variant},
                    "Period": window["Period"],
                    "Stat": "p99",
                },
            }
        ],
        StartTime=window["StartTime"],
        EndTime=window["EndTime"],
        ScanBy="TimestampAscending",
    )
    bounds = {point["Timestamp"]: point for point in extremes["Datapoints"]}
    by_time = sorted(percentiles["Datapoints"], key=lambda point: point["Timestamp"])
    assert [point["Timestamp"] for point in by_time] == sorted(bounds)
    assert sum(point["SampleCount"] for point in bounds.values()) == 8
    for point in by_time:
        p50, p99 = point["ExtendedStatistics"]["p50"], point["ExtendedStatistics"]["p99"]
        low, high = bounds[point["Timestamp"]]["Minimum"], bounds[point["Timestamp"]]["Maximum"]
        assert low <= p50 <= p99 <= high, (metric, point, low, high)
    (result,) = data["MetricDataResults"]
    assert result["Values"] == [point["ExtendedStatistics"]["p99"] for point in by_time]


def test_aws_cli_describe_log_groups_lists_the_training_and_endpoint_groups(
    user_environment, metric_job, stack
):
    everything = aws(user_environment, "logs", "describe-log-groups")
    training = aws(
        user_environment, "logs", "describe-log-groups", "--log-group-name-prefix", "/aws/sagemaker/Tr"
    )

    names = [group["logGroupName"] for group in everything["logGroups"]]
    assert TRAINING in names and names == sorted(names)
    (group,) = training["logGroups"]
    assert group["logGroupName"] == TRAINING
    account, region = stack.account_id, user_environment["AWS_DEFAULT_REGION"]
    assert group["arn"] == f"arn:aws:logs:{region}:{account}:log-group:{TRAINING}:*"
    assert group["storedBytes"] > 0 and group["creationTime"] > 1_600_000_000_000
