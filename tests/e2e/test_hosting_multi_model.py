"""Multi-model endpoints with stock boto3 against the live stack: one endpoint (one instance of
the example multi-model image) serving three models from one S3 prefix, chosen per request by
TargetModel. The session allows two models per container (SAGEPORT_MULTI_MODEL_MAX_LOADED=2 in
tests/settings.py), so the third evicts the least recently used one. And the SageMaker SDK v2's
MultiDataModel, which makes such a model itself."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError
from sagemaker.deserializers import JSONDeserializer
from sagemaker.multidatamodel import MultiDataModel
from sagemaker.predictor import Predictor
from sagemaker.serializers import JSONSerializer

from tests.conftest import _build_example_image
from tests.e2e.conftest import unique_name
from tests.e2e.hosting import INSTANCE_TYPE, invoke_json, wait_for_endpoint, wait_until
from tests.e2e.sdk import ROLE
from tests.tar_archives import tar_gz

pytest_plugins = ["tests.e2e.hosting_fixtures"]

COEFFICIENTS = {"model-a.tar.gz": 1, "model-b.tar.gz": 2, "model-c.tar.gz": 3}


@pytest.fixture(scope="module")
def multi_model_image() -> str:
    return _build_example_image("python-multi-model")


@pytest.fixture
def endpoint(s3, bucket, sagemaker, hosting, multi_model_image) -> str:
    for key, coefficient in COEFFICIENTS.items():
        model = {"model.json": json.dumps({"coefficient": coefficient}).encode()}
        s3.put_object(Bucket=bucket, Key=f"models/{key}", Body=tar_gz(model))
    model = hosting.model(multi_model_image, Mode="MultiModel", ModelDataUrl=f"s3://{bucket}/models/")
    name = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))
    wait_for_endpoint(sagemaker, name)
    return name


def predict(runtime, endpoint: str, target_model: str, value: float = 10) -> dict:
    response = runtime.invoke_endpoint(
        EndpointName=endpoint, Body=json.dumps(value), ContentType="application/json",
        TargetModel=target_model,
    )
    return json.loads(response["Body"].read())


def error_of(call) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        call()
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]


def test_create_model_describes_a_multi_model_container(sagemaker, hosting, multi_model_image, bucket):
    name = hosting.model(multi_model_image, Mode="MultiModel", ModelDataUrl=f"s3://{bucket}/models/")

    container = sagemaker.describe_model(ModelName=name)["PrimaryContainer"]

    assert (container["Mode"], container["ModelDataUrl"]) == ("MultiModel", f"s3://{bucket}/models/")


def test_each_target_model_answers_and_the_least_recently_used_is_evicted_and_reloaded(
    stack, runtime, endpoint
):
    started = datetime.now(UTC)
    assert predict(runtime, endpoint, "model-a.tar.gz") == {
        "model": "model-a.tar.gz", "prediction": 10, "loads": 1
    }
    assert predict(runtime, endpoint, "model-b.tar.gz")["prediction"] == 20
    assert predict(runtime, endpoint, "model-a.tar.gz")["loads"] == 1  # still loaded: a cache hit
    assert predict(runtime, endpoint, "model-c.tar.gz")["prediction"] == 30  # evicts model-b

    assert predict(runtime, endpoint, "model-a.tar.gz")["loads"] == 1
    assert predict(runtime, endpoint, "model-b.tar.gz") == {
        "model": "model-b.tar.gz", "prediction": 20, "loads": 2  # evicted, loaded again
    }

    cloudwatch = stack.client("cloudwatch")
    variant = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": "AllTraffic"}]
    window = {
        "StartTime": started - timedelta(minutes=1), "EndTime": started + timedelta(minutes=10), "Period": 600
    }

    def statistic(metric: str, name: str) -> float:
        points = cloudwatch.get_metric_statistics(
            Namespace="AWS/SageMaker", MetricName=metric, Dimensions=variant, Statistics=[name], **window
        )["Datapoints"]
        return sum(point[name] for point in points)

    wait_until(lambda: statistic("ModelCacheHit", "SampleCount") == 6, timeout=30, what="6 requests counted")
    assert statistic("ModelCacheHit", "Sum") == 2  # the two calls to model-a while it stayed loaded
    assert statistic("ModelLoadingWaitTime", "SampleCount") == 4
    assert statistic("ModelLoadedCount", "Maximum") == 2


def test_target_model_errors_are_sagemaker_s(stack, runtime, endpoint, bucket, hosting, probe_image):
    code, message = error_of(lambda: predict(runtime, endpoint, "nope.tar.gz"))
    assert code == "ValidationError"
    assert message.startswith(f"Failed to download model data(bucket: {bucket}, key: models/nope.tar.gz).")
    # The API's port (what containers reach) serves the same application: loads, answers, refusals.
    through_the_api = stack.client("sagemaker-runtime", endpoint_url=stack.endpoint_url)
    assert predict(through_the_api, endpoint, "model-b.tar.gz")["prediction"] == 20
    code, message = error_of(lambda: predict(through_the_api, endpoint, "nope.tar.gz"))
    assert (code, message.startswith("Failed to download model data(")) == ("ValidationError", True)

    code, message = error_of(lambda: invoke_json(runtime, endpoint))
    assert (code, "needs a TargetModel" in message) == ("ValidationError", True)

    single = hosting.probe_endpoint(probe_image)
    code, message = error_of(lambda: predict(runtime, single, "model-a.tar.gz"))
    assert (code, "not a multi-model endpoint" in message) == ("ValidationError", True)


def test_the_sdks_multi_data_model_deploys_and_predicts_per_target_model(
    sdk_session, sagemaker, multi_model_image, tmp_path
):
    prefix = f"s3://{sdk_session.default_bucket()}/{unique_name('mme')}/"
    archive = tmp_path / "model-d.tar.gz"
    archive.write_bytes(tar_gz({"model.json": json.dumps({"coefficient": 4}).encode()}))
    name = unique_name("sdk-mme")
    model = MultiDataModel(
        name=name, model_data_prefix=prefix, image_uri=multi_model_image, role=ROLE,
        sagemaker_session=sdk_session,
    )
    model.add_model(str(archive))  # uploaded below the prefix
    model.deploy(initial_instance_count=1, instance_type=INSTANCE_TYPE, endpoint_name=name)
    predictor = Predictor(
        name, sagemaker_session=sdk_session, serializer=JSONSerializer(), deserializer=JSONDeserializer()
    )
    try:
        assert list(model.list_models()) == ["model-d.tar.gz"]
        assert predictor.predict(10, target_model="model-d.tar.gz")["prediction"] == 40
        assert sagemaker.describe_model(ModelName=name)["PrimaryContainer"]["Mode"] == "MultiModel"
    finally:
        sagemaker.delete_endpoint(EndpointName=name)
