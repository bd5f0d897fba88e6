"""Serverless endpoints with stock boto3 (and the SageMaker SDK v2's ServerlessInferenceConfig)
against the live stack: no container until the first request, which cold-starts one and is
answered; requests past MaxConcurrency are throttled with ThrottlingException; once idle
(SAGEPORT_SERVERLESS_IDLE_SECONDS=2 in tests/settings.py) the container is gone from the engine
and the next request cold-starts another; SageMaker's refusals of bad serverless configs."""

import threading
from datetime import UTC, datetime, timedelta

import docker
import pytest
from botocore.exceptions import ClientError
from sagemaker.deserializers import JSONDeserializer
from sagemaker.model import Model
from sagemaker.predictor import Predictor
from sagemaker.serializers import JSONSerializer
from sagemaker.serverless import ServerlessInferenceConfig

from tests.e2e.conftest import unique_name
from tests.e2e.hosting import INSTANCE_TYPE, invoke_json, unique, wait_for_endpoint, wait_until
from tests.e2e.sdk import ROLE

pytest_plugins = ["tests.e2e.hosting_fixtures"]

MEMORY_MB = 1024


@pytest.fixture(scope="module")
def engine():
    client = docker.from_env()
    yield client
    client.close()


def containers_of(engine, arn: str) -> list:
    return engine.containers.list(filters={"label": f"sageport.resource={arn}"}, ignore_removed=True)


def serverless_variant(model: str, **config) -> dict:
    return {
        "VariantName": "AllTraffic",
        "ModelName": model,
        "ServerlessConfig": {"MemorySizeInMB": MEMORY_MB, "MaxConcurrency": 2, **config},
    }


def serverless_endpoint(sagemaker, hosting, image: str, **config) -> tuple[str, str]:
    """An InService serverless endpoint of the probe: (name, ARN)."""
    model = hosting.model(image, {"PROBE_TAG": "serverless"})
    config_name = unique("config")
    sagemaker.create_endpoint_config(
        EndpointConfigName=config_name, ProductionVariants=[serverless_variant(model, **config)]
    )
    name = hosting.endpoint(config_name)
    return name, wait_for_endpoint(sagemaker, name)["EndpointArn"]


def error_of(call) -> tuple[str, int, str]:
    with pytest.raises(ClientError) as caught:
        call()
    error = caught.value.response
    return error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Message"]


def test_a_request_cold_starts_a_container_that_stops_when_idle(
    stack, sagemaker, hosting, runtime, engine, probe_image
):
    started = datetime.now(UTC)
    name, arn = serverless_endpoint(sagemaker, hosting, probe_image)
    variant = sagemaker.describe_endpoint(EndpointName=name)["ProductionVariants"][0]
    assert variant["CurrentServerlessConfig"] == {"MemorySizeInMB": MEMORY_MB, "MaxConcurrency": 2}
    assert "CurrentInstanceCount" not in variant
    assert containers_of(engine, arn) == []  # nothing runs before the first request

    assert invoke_json(runtime, name)["tag"] == "serverless"  # waited for its cold start
    (first,) = containers_of(engine, arn)
    assert first.attrs["HostConfig"]["Memory"] == MEMORY_MB * 1024 * 1024

    wait_until(lambda: containers_of(engine, arn) == [], timeout=60, what="the idle container to stop")
    assert invoke_json(runtime, name)["tag"] == "serverless"  # a cold start again
    (second,) = containers_of(engine, arn)
    assert second.id != first.id  # a new container (its slot, hence its name, may be the same)

    cloudwatch = stack.client("cloudwatch")
    dimensions = [{"Name": "EndpointName", "Value": name}, {"Name": "VariantName", "Value": "AllTraffic"}]

    def setups() -> float:
        points = cloudwatch.get_metric_statistics(
            Namespace="AWS/SageMaker",
            MetricName="ModelSetupTime",
            Dimensions=dimensions,
            StartTime=started - timedelta(minutes=1),
            EndTime=started + timedelta(minutes=10),
            Period=600,
            Statistics=["SampleCount"],
        )["Datapoints"]
        return sum(point["SampleCount"] for point in points)

    assert wait_until(lambda: setups() == 2, timeout=30, what="a ModelSetupTime per cold start")


def test_requests_past_max_concurrency_are_throttled(stack, sagemaker, hosting, runtime, engine, probe_image):
    name, arn = serverless_endpoint(sagemaker, hosting, probe_image, MaxConcurrency=1)
    invoke_json(runtime, name)  # warm
    slow: dict = {}
    holder = threading.Thread(
        target=lambda: slow.update(invoke_json(runtime, name, {"sleep": 3})), daemon=True
    )
    holder.start()
    # On the API's port: the slots are counted across every serving process, and the same
    # application admits the request there.
    other = stack.client("sagemaker-runtime", endpoint_url=stack.endpoint_url, config=runtime.meta.config)

    def throttled() -> tuple | None:
        try:
            invoke_json(other, name)
        except ClientError as error:
            return error.response["Error"]["Code"], error.response["ResponseMetadata"]["HTTPStatusCode"]
        return None

    assert wait_until(throttled, timeout=10, what="a throttled request") == ("ThrottlingException", 400)
    holder.join(timeout=30)
    # Answered: longer than the idle window, yet its container was not stopped under it.
    assert slow["tag"] == "serverless"
    assert len(containers_of(engine, arn)) == 1  # never more than MaxConcurrency


def test_bad_serverless_configs_are_refused_with_sagemaker_s_reasons(sagemaker, hosting, probe_image, bucket):
    model = hosting.model(probe_image)
    multi = hosting.model(probe_image, Mode="MultiModel", ModelDataUrl=f"s3://{bucket}/models/")
    instances = {"InstanceType": INSTANCE_TYPE, "InitialInstanceCount": 1}
    config = unique("config")
    for variants, extra, complaint in (
        ([serverless_variant(model, MemorySizeInMB=1500)], {}, "MemorySizeInMB must be one of"),
        ([serverless_variant(model, MemorySizeInMB=8192)], {}, "less than or equal to 6144"),
        ([serverless_variant(model, ProvisionedConcurrency=3)], {}, "less than or equal to MaxConcurrency"),
        (
            [{**serverless_variant(model), **instances}],
            {},
            "InstanceType cannot be given with ServerlessConfig",
        ),
        ([serverless_variant(model), {**serverless_variant(model), "VariantName": "B"}], {}, "only one"),
        ([serverless_variant(multi)], {}, "multi-model"),
        (
            [serverless_variant(model)],
            {"AsyncInferenceConfig": {"OutputConfig": {"S3OutputPath": f"s3://{bucket}/out/"}}},
            "AsyncInferenceConfig is not supported for serverless endpoints",
        ),
    ):
        code, status, message = error_of(
            lambda variants=variants, extra=extra: sagemaker.create_endpoint_config(
                EndpointConfigName=config, ProductionVariants=variants, **extra
            )
        )
        assert (code, status) == ("ValidationException", 400) and complaint in message, message
    assert sagemaker.list_endpoint_configs(NameContains=config)["EndpointConfigs"] == []


def test_serverless_update_config_changes_the_limits_and_no_update_converts_the_endpoint(
    sagemaker, hosting, probe_image
):
    name, _ = serverless_endpoint(sagemaker, hosting, probe_image)
    code, _, message = error_of(
        lambda: sagemaker.update_endpoint_weights_and_capacities(
            EndpointName=name,
            DesiredWeightsAndCapacities=[{"VariantName": "AllTraffic", "DesiredInstanceCount": 2}],
        )
    )
    assert code == "ValidationException" and "ServerlessUpdateConfig" in message
    sagemaker.update_endpoint_weights_and_capacities(
        EndpointName=name,
        DesiredWeightsAndCapacities=[
            {"VariantName": "AllTraffic", "ServerlessUpdateConfig": {"MaxConcurrency": 5}}
        ],
    )
    variant = wait_for_endpoint(sagemaker, name)["ProductionVariants"][0]
    assert variant["DesiredServerlessConfig"] == {"MemorySizeInMB": MEMORY_MB, "MaxConcurrency": 5}

    instances = hosting.config(("AllTraffic", hosting.model(probe_image), 1, 1.0))
    code, _, message = error_of(
        lambda: sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=instances)
    )
    assert code == "ValidationException" and "with serverless variants cannot be updated" in message


def test_the_sdks_serverless_inference_config_deploys_and_predicts(sdk_session, sagemaker, probe_image):
    name = unique_name("sdk-serverless")
    model = Model(image_uri=probe_image, role=ROLE, sagemaker_session=sdk_session, name=name)
    config = ServerlessInferenceConfig(memory_size_in_mb=2048, max_concurrency=3)
    model.deploy(serverless_inference_config=config, endpoint_name=name, wait=False)
    try:
        wait_for_endpoint(sagemaker, name)
        described = sagemaker.describe_endpoint_config(EndpointConfigName=name)["ProductionVariants"][0]
        assert described["ServerlessConfig"] == {"MemorySizeInMB": 2048, "MaxConcurrency": 3}
        predictor = Predictor(
            name, sagemaker_session=sdk_session, serializer=JSONSerializer(), deserializer=JSONDeserializer()
        )
        assert "tag" in predictor.predict({})  # the probe's report: a cold-started container answered
    finally:
        sagemaker.delete_endpoint(EndpointName=name)
        sagemaker.delete_endpoint_config(EndpointConfigName=name)
        sagemaker.delete_model(ModelName=name)
