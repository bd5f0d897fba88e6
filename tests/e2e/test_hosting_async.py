"""Asynchronous inference end to end with stock boto3: an endpoint config with
AsyncInferenceConfig, InvokeEndpointAsync with an input in S3, the output (or the failure) polled
where the answer said it would be, and a backlog queued while the worker is down drained once
it is back, one output per request. The backlog metrics land in CloudWatch."""

import json
import os
import subprocess
import textwrap

import boto3
import pytest
from botocore.exceptions import ClientError
from sagemaker.async_inference import AsyncInferenceConfig, WaiterConfig
from sagemaker.exceptions import AsyncInferenceModelError
from sagemaker.model import Model
from sagemaker.predictor import Predictor
from sagemaker.predictor_async import AsyncPredictor

from tests.conftest import read_env_file
from tests.e2e.hosting import INSTANCE_TYPE, unique, wait_for_endpoint, wait_until
from tests.e2e.sdk import ROLE
from tests.e2e.test_cloudwatch_metrics import user_environment  # noqa: F401  (fixture)

pytest_plugins = ["tests.e2e.hosting_fixtures"]


@pytest.fixture
def async_endpoint(sagemaker, hosting, probe_image, bucket):
    """An InService asynchronous endpoint of one probe; outputs under s3://<bucket>/out/."""
    config = unique("async-config")
    async_config = {
        "OutputConfig": {"S3OutputPath": f"s3://{bucket}/out", "S3FailurePath": f"s3://{bucket}/failed"},
        "ClientConfig": {"MaxConcurrentInvocationsPerInstance": 2},
    }
    sagemaker.create_endpoint_config(
        EndpointConfigName=config,
        ProductionVariants=[{"VariantName": "AllTraffic", "ModelName": hosting.model(probe_image),
                             "InitialInstanceCount": 1, "InstanceType": INSTANCE_TYPE}],
        AsyncInferenceConfig=async_config,
    )
    described = sagemaker.describe_endpoint_config(EndpointConfigName=config)
    assert described["AsyncInferenceConfig"] == async_config
    name = hosting.endpoint(config)
    assert wait_for_endpoint(sagemaker, name)["AsyncInferenceConfig"] == async_config
    return name


def _object(s3, uri: str, timeout: float = 60.0) -> bytes:
    bucket, key = uri.removeprefix("s3://").split("/", 1)

    def body():
        try:
            return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as error:
            if error.response["Error"]["Code"] in ("NoSuchKey", "404"):
                return None
            raise

    return wait_until(body, timeout=timeout, what=f"the object {uri}")


def _invoke(runtime, s3, bucket: str, endpoint: str, payload: dict, **request) -> dict:
    key = f"in/{unique('input')}.json"
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(payload).encode())
    return runtime.invoke_endpoint_async(
        EndpointName=endpoint, InputLocation=f"s3://{bucket}/{key}", ContentType="application/json", **request
    )


def test_an_async_request_is_answered_at_once_and_its_output_written_to_s3(
    async_endpoint, runtime, s3, bucket
):
    answer = _invoke(runtime, s3, bucket, async_endpoint, {}, InferenceId="first", CustomAttributes="trace=7")

    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 202
    assert answer["InferenceId"] == "first"
    assert answer["OutputLocation"] == f"s3://{bucket}/out/first.out"
    assert answer["FailureLocation"] == f"s3://{bucket}/failed/first-error.out"
    report = json.loads(_object(s3, answer["OutputLocation"]))
    assert report["headers"]["content-type"] == "application/json"
    assert report["headers"]["x-amzn-sagemaker-custom-attributes"] == "trace=7"
    assert report["headers"]["user-agent"] == "AHC/2.0"


SDK_V3_SCRIPT = textwrap.dedent("""
    import sys
    from sagemaker.core.resources import Endpoint

    endpoint_name, input_location = sys.argv[1:3]
    answer = Endpoint.get(endpoint_name).invoke_async(
        input_location=input_location, content_type="application/json", inference_id="from-v3")
    print(answer.output_location)
""")


def test_sdk_v3s_endpoint_invokes_async_and_the_output_lands_where_it_said(
    async_endpoint, stack, s3, bucket, sdk_v3_python, tmp_path
):
    """SDK v3 (sagemaker-core's Endpoint resource, its own virtualenv), configured by the stack's
    env file alone."""
    s3.put_object(Bucket=bucket, Key="in/v3.json", Body=b"{}")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **read_env_file(stack.data_dir / "env")}

    result = subprocess.run(
        [sdk_v3_python, "-c", SDK_V3_SCRIPT, async_endpoint, f"s3://{bucket}/in/v3.json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )

    assert result.returncode == 0, result.stderr[-4000:]
    output = f"s3://{bucket}/out/from-v3.out"
    assert result.stdout.split()[-1] == output
    assert json.loads(_object(s3, output))["headers"]["content-type"] == "application/json"


def test_a_request_the_model_refuses_lands_in_the_failure_path(async_endpoint, runtime, s3, bucket):
    answer = _invoke(runtime, s3, bucket, async_endpoint, {"status": 400, "message": "no such feature"})

    failure = _object(s3, answer["FailureLocation"]).decode()
    assert failure.startswith("Received client error (400) from primary with message")
    assert "no such feature" in failure
    assert not s3.list_objects_v2(Bucket=bucket, Prefix="out/").get("Contents")


def test_an_input_of_another_account_is_refused(async_endpoint, runtime, stack):
    other_key, other_secret = stack.create_access_key("210987654321")
    theirs = stack.client("s3", aws_access_key_id=other_key, aws_secret_access_key=other_secret)
    theirs.create_bucket(Bucket=unique("theirs"))
    bucket = theirs.list_buckets()["Buckets"][0]["Name"]

    with pytest.raises(ClientError) as refused:
        runtime.invoke_endpoint_async(EndpointName=async_endpoint, InputLocation=f"s3://{bucket}/x")
    assert refused.value.response["Error"]["Code"] == "ValidationError"
    assert "AccessDenied" in refused.value.response["Error"]["Message"]


def test_a_backlog_queued_while_the_worker_is_down_is_drained_once(
    async_endpoint, runtime, s3, bucket, stack, user_environment  # noqa: F811
):
    """Two slow requests the worker may be running when it is killed (they run again once their
    lease, the 5 s invocation timeout + 10 s, ends; either way, one output each), and three
    accepted while it is down."""
    slow = {"sleep": 2}
    running = [
        _invoke(runtime, s3, bucket, async_endpoint, slow, InferenceId=f"slow{n}", InvocationTimeoutSeconds=5)
        for n in range(2)
    ]
    stack.kill_worker()
    try:
        queued = [_invoke(runtime, s3, bucket, async_endpoint, {}, InferenceId=f"r{n}") for n in range(3)]
    finally:
        stack.start_worker()
    ids = [answer["InferenceId"] for answer in running + queued]

    for inference_id in ids:
        _object(s3, f"s3://{bucket}/out/{inference_id}.out", timeout=120)
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix="out/")["Contents"]]
    assert sorted(keys) == sorted(f"out/{inference_id}.out" for inference_id in ids)

    cloudwatch = boto3.session.Session().client("cloudwatch")
    dimensions = [{"Name": "EndpointName", "Value": async_endpoint}]

    def backlog_metrics():
        listed = cloudwatch.list_metrics(Namespace="AWS/SageMaker", Dimensions=dimensions)["Metrics"]
        names = {metric["MetricName"] for metric in listed}
        return names if {"ApproximateBacklogSize", "HasBacklogWithoutCapacity"} <= names else None

    names = wait_until(backlog_metrics, timeout=60, what="the backlog metrics")
    assert {"ApproximateBacklogSizePerInstance", "ApproximateAgeOfOldestRequest"} <= names


def test_the_sdks_async_predictor_gets_the_output_and_raises_on_a_failure(
    sdk_session, sagemaker, probe_image, bucket
):
    """SDK v2 `Model.deploy(async_inference_config=...)` returns an AsyncPredictor; `predict`
    uploads the input, calls InvokeEndpointAsync and waits for the output or failure object."""
    endpoint = unique("sdk-async")
    config = AsyncInferenceConfig(
        output_path=f"s3://{bucket}/sdk-out", failure_path=f"s3://{bucket}/sdk-failed"
    )
    quick = WaiterConfig(max_attempts=120, delay=1)
    try:
        model = Model(
            image_uri=probe_image, role=ROLE, sagemaker_session=sdk_session, predictor_cls=Predictor
        )
        predictor = model.deploy(
            initial_instance_count=1, instance_type=INSTANCE_TYPE, endpoint_name=endpoint,
            async_inference_config=config,
        )
        assert isinstance(predictor, AsyncPredictor)

        report = json.loads(predictor.predict(data=b"{}", waiter_config=quick))
        assert report["body_length"] == 2
        with pytest.raises(AsyncInferenceModelError, match="no such feature"):
            predictor.predict(data=json.dumps({"status": 400, "message": "no such feature"}).encode(),
                              waiter_config=quick)
    finally:
        sagemaker.delete_endpoint(EndpointName=endpoint)
