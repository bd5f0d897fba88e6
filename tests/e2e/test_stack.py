"""The live stack as a user meets it: started by the fixture, described by `<data>/env`."""
import signal
import time
import uuid

import boto3
import pytest
from botocore.exceptions import ClientError
from django.conf import settings

from controlplane.celery import app as celery_app
from tests.conftest import read_env_file
from tests.e2e.hosting import NO_RETRIES

USER_ENDPOINT_VARIABLES = (
    "AWS_ENDPOINT_URL_SAGEMAKER",
    "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS",
    "AWS_ENDPOINT_URL_CLOUDWATCH",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL_IAM",
    "AWS_ENDPOINT_URL",  # every other service: refused by the API rather than sent to AWS
)


def test_env_file_points_aws_clients_at_the_stack(stack):
    variables = read_env_file(stack.data_dir / "env")

    assert variables["AWS_ACCESS_KEY_ID"] == stack.access_key_id
    assert variables["AWS_SECRET_ACCESS_KEY"] == stack.secret_access_key
    assert variables["AWS_DEFAULT_REGION"] == stack.region
    assert {variables[name] for name in USER_ENDPOINT_VARIABLES} == {stack.endpoint_url}
    assert variables["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"] == f"http://127.0.0.1:{settings.SAGEPORT_RUNTIME_PORT}"
    assert variables["AWS_ENDPOINT_URL_S3"] == stack.s3_endpoint_url
    assert variables["AWS_EC2_METADATA_DISABLED"] == "true"


def test_a_client_configured_only_by_the_env_file_reaches_the_api(stack, monkeypatch):
    for name, value in read_env_file(stack.data_dir / "env").items():
        monkeypatch.setenv(name, value)

    assert boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] is not None


def test_the_sdks_default_bucket_exists_from_the_start(stack):
    bucket = f"sagemaker-{stack.region}-{stack.account_id}"

    stack.client("s3").head_bucket(Bucket=bucket)  # raises if it is missing


def test_cloudwatch_is_served_by_the_stack_and_an_operation_it_lacks_is_a_clear_error(stack, monkeypatch):
    for name, value in read_env_file(stack.data_dir / "env").items():
        monkeypatch.setenv(name, value)
    cloudwatch = boto3.client("cloudwatch")

    assert cloudwatch.list_metrics(Namespace="Nothing/Here")["Metrics"] == []
    with pytest.raises(ClientError) as raised:
        cloudwatch.describe_alarms()
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 501
    assert "GraniteServiceVersion20100801.DescribeAlarms" in raised.value.response["Error"]["Message"]


def test_user_and_platform_key_pairs_share_the_same_s3(stack, s3_client):
    user_s3 = stack.client("s3")
    bucket = f"smoke-{uuid.uuid4().hex[:12]}"
    user_s3.create_bucket(Bucket=bucket)

    user_s3.put_object(Bucket=bucket, Key="from-user", Body=b"user data")
    s3_client.put_object(Bucket=bucket, Key="from-platform", Body=b"model")

    assert s3_client.get_object(Bucket=bucket, Key="from-user")["Body"].read() == b"user data"
    assert user_s3.get_object(Bucket=bucket, Key="from-platform")["Body"].read() == b"model"


def test_a_killed_worker_can_be_started_again(stack):
    stack.kill_worker()
    assert not celery_app.control.ping(timeout=0.5)

    stack.start_worker()

    assert celery_app.control.ping(timeout=1)


def test_an_access_key_created_for_another_account_is_accepted(stack):
    access_key_id, secret = stack.create_access_key("210987654321")

    other = stack.client("sagemaker", aws_access_key_id=access_key_id, aws_secret_access_key=secret)

    assert other.list_training_jobs()["TrainingJobSummaries"] == []


def test_a_crashed_api_is_restarted_and_a_request_sent_while_it_is_down_is_answered(stack):
    client = stack.client("sagemaker", config=NO_RETRIES)
    crashed = stack.supervisor.pid("api")

    stack.supervisor.signal("api", signal.SIGKILL)
    deadline = time.monotonic() + 10
    while stack.supervisor.pid("api") == crashed:  # until the supervisor has seen it die
        assert time.monotonic() < deadline
        time.sleep(0.05)

    # The supervisor keeps the listening sockets: the connection waits for the new server.
    assert client.list_training_jobs()["TrainingJobSummaries"] is not None
    assert stack.supervisor.pid("api") not in (None, crashed)


def test_a_crashed_worker_is_restarted_by_the_supervisor(stack):
    stack.crash("worker")

    assert celery_app.control.ping(timeout=1)
