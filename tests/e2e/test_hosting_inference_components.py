"""Inference components with stock boto3 against the live stack: an endpoint of one ml.m5.large
instance (2 vCPUs, 8192 MiB) made without models, components whose copies share it (a quarter vCPU
and 1 GiB each), invoked by component; copies added, a blue/green update of the specification,
the refusals, a component that does not fit, and deletion."""

import time
from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError
from sagemaker.compute_resource_requirements.resource_requirements import ResourceRequirements
from sagemaker.deserializers import JSONDeserializer
from sagemaker.enums import EndpointType
from sagemaker.model import Model
from sagemaker.predictor import Predictor
from sagemaker.serializers import JSONSerializer

from tests.e2e.hosting import INSTANCE_TYPE, invoke_json, unique, wait_for_endpoint, wait_until
from tests.e2e.sdk import ROLE

pytest_plugins = ["tests.e2e.hosting_fixtures"]

COPY = {"NumberOfCpuCoresRequired": 0.25, "MinMemoryRequiredInMb": 1024}


def error_of(call) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        call()
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]


@pytest.fixture
def endpoint(sagemaker, hosting) -> str:
    config = unique("ic-config")
    sagemaker.create_endpoint_config(
        EndpointConfigName=config,
        ExecutionRoleArn=ROLE,
        ProductionVariants=[
            {"VariantName": "AllTraffic", "InstanceType": INSTANCE_TYPE, "InitialInstanceCount": 1}
        ],
    )
    name = hosting.endpoint(config)
    described = wait_for_endpoint(sagemaker, name)
    assert described["ProductionVariants"][0]["CurrentInstanceCount"] == 1
    return name


@pytest.fixture
def components(sagemaker, hosting):
    """Creates components; deletes them (and waits) before the endpoints go."""
    made: list[str] = []

    def create(endpoint: str, image: str, tag: str, copies: int = 1, **requirements) -> str:
        name = unique("ic")
        sagemaker.create_inference_component(
            InferenceComponentName=name,
            EndpointName=endpoint,
            VariantName="AllTraffic",
            Specification={
                "Container": {"Image": image, "Environment": {"PROBE_TAG": tag}},
                "ComputeResourceRequirements": {**COPY, **requirements},
            },
            RuntimeConfig={"CopyCount": copies},
        )
        made.append(name)
        return name

    yield create
    for name in made:
        wait_for_component(sagemaker, name, {"InService", "Failed"})
        sagemaker.delete_inference_component(InferenceComponentName=name)
    for name in made:
        wait_until(lambda n=name: gone(sagemaker, n), timeout=60, what=f"{name} deleted")


def gone(sagemaker, name: str) -> bool:
    try:
        sagemaker.describe_inference_component(InferenceComponentName=name)
    except ClientError as error:
        return "Could not find inference component" in str(error)
    return False


def wait_for_component(
    sagemaker, name: str, statuses=frozenset({"InService"}), timeout: float = 90.0
) -> dict:
    def reached():
        described = sagemaker.describe_inference_component(InferenceComponentName=name)
        status = described["InferenceComponentStatus"]
        if status == "Failed" and "Failed" not in statuses:
            raise AssertionError(f"{name} failed: {described.get('FailureReason')}")
        return described if status in statuses else None

    return wait_until(reached, timeout=timeout, what=f"{name} in {sorted(statuses)}")


def test_components_share_the_endpoint_are_invoked_by_name_scaled_and_updated_blue_green(
    stack, sagemaker, runtime, endpoint, components, probe_image
):
    first = components(endpoint, probe_image, "first")
    second = components(endpoint, probe_image, "second")
    described = wait_for_component(sagemaker, first)
    wait_for_component(sagemaker, second)

    assert described["EndpointName"] == endpoint and described["VariantName"] == "AllTraffic"
    assert described["RuntimeConfig"] == {"DesiredCopyCount": 1, "CurrentCopyCount": 1}
    assert invoke_json(runtime, endpoint, InferenceComponentName=first)["tag"] == "first"
    assert invoke_json(runtime, endpoint, InferenceComponentName=second)["tag"] == "second"
    listed = sagemaker.list_inference_components(EndpointNameEquals=endpoint)["InferenceComponents"]
    assert sorted(item["InferenceComponentName"] for item in listed) == sorted([first, second])
    assert endpoint in [item["EndpointName"] for item in sagemaker.list_endpoints()["Endpoints"]]
    assert first not in [item["EndpointName"] for item in sagemaker.list_endpoints()["Endpoints"]]

    sagemaker.update_inference_component_runtime_config(
        InferenceComponentName=first, DesiredRuntimeConfig={"CopyCount": 2}
    )
    assert wait_for_component(sagemaker, first)["RuntimeConfig"]["CurrentCopyCount"] == 2

    sagemaker.update_inference_component(
        InferenceComponentName=first,
        Specification={
            "Container": {"Image": probe_image, "Environment": {"PROBE_TAG": "green"}},
            "ComputeResourceRequirements": COPY,
        },
    )
    assert sagemaker.describe_inference_component(InferenceComponentName=first)[
        "InferenceComponentStatus"
    ] == ("Updating")
    # Every request is answered while the new copies start: by the old ones, then by the new ones.
    deadline = time.monotonic() + 90
    answered = []
    while (described := sagemaker.describe_inference_component(InferenceComponentName=first))[
        "InferenceComponentStatus"
    ] == "Updating" and time.monotonic() < deadline:
        answered.append(invoke_json(runtime, endpoint, InferenceComponentName=first)["tag"])
    assert (described["InferenceComponentStatus"], described.get("FailureReason")) == ("InService", None)
    assert set(answered) <= {"first", "green"}
    assert {invoke_json(runtime, endpoint, InferenceComponentName=first)["tag"] for _ in range(4)} == {
        "green"
    }
    assert described["RuntimeConfig"] == {"DesiredCopyCount": 2, "CurrentCopyCount": 2}

    def invocations() -> float:
        points = stack.client("cloudwatch").get_metric_statistics(
            Namespace="AWS/SageMaker",
            MetricName="Invocations",
            Statistics=["Sum"],
            Period=600,
            Dimensions=[{"Name": "InferenceComponentName", "Value": second}],
            StartTime=datetime.now(UTC) - timedelta(minutes=10),
            EndTime=datetime.now(UTC) + timedelta(minutes=1),
        )["Datapoints"]
        return sum(point["Sum"] for point in points)

    wait_until(lambda: invocations() == 1, timeout=30, what="the component's invocation counted")
    streams = stack.client("logs").describe_log_streams(
        logGroupName=f"/aws/sagemaker/InferenceComponents/{first}"
    )
    assert streams["logStreams"]


def test_what_is_refused_and_a_component_that_does_not_fit(
    sagemaker, runtime, endpoint, components, hosting, probe_image
):
    code, message = error_of(lambda: invoke_json(runtime, endpoint))
    assert (code, message) == (
        "ValidationError",
        (
            "Inference Component Name header is required for endpoints to which you plan to deploy inference "
            "components. Please include Inference Component Name header or consider using SageMaker models."
        ),
    )
    code, message = error_of(lambda: invoke_json(runtime, endpoint, InferenceComponentName="nothing-here"))
    assert code == "ValidationError" and "nothing-here" in message

    code, message = error_of(lambda: components(endpoint, probe_image, "huge", MinMemoryRequiredInMb=9000))
    assert code == "ValidationException"
    assert (
        "MinMemoryRequiredInMb 9000 is more than an ml.m5.large instance has (8192 MiB of memory)" in message
    )

    models_endpoint = hosting.probe_endpoint(probe_image)
    code, message = error_of(lambda: components(models_endpoint, probe_image, "x"))
    assert code == "ValidationException" and "runs models" in message
    code, _ = error_of(lambda: invoke_json(runtime, models_endpoint, InferenceComponentName="x"))
    assert code == "ValidationError"

    small = components(endpoint, probe_image, "small", MinMemoryRequiredInMb=4096)
    wait_for_component(sagemaker, small)
    code, message = error_of(lambda: sagemaker.delete_endpoint(EndpointName=endpoint))
    assert code == "ValidationException" and "still hosts inference components" in message

    # 4096 MiB are reserved: a component of 5000 MiB copies has no instance left.
    large = components(endpoint, probe_image, "large", MinMemoryRequiredInMb=5000)
    failed = wait_for_component(sagemaker, large, {"Failed"})
    assert failed["FailureReason"].startswith("ResourceLimitExceeded: inference component")
    # Copies that do not fit are not added: the component keeps those it has.
    sagemaker.update_inference_component_runtime_config(
        InferenceComponentName=small, DesiredRuntimeConfig={"CopyCount": 3}
    )
    wait_until(
        lambda: (
            "capacity change was not applied"
            in (
                sagemaker.describe_inference_component(InferenceComponentName=small).get("FailureReason")
                or ""
            )
        ),
        timeout=60,
        what="the copy count refused",
    )
    assert wait_for_component(sagemaker, small)["RuntimeConfig"]["CurrentCopyCount"] == 1


def test_the_sdks_model_deploys_a_component_and_its_predictor_invokes_it(
    sdk_session, sagemaker, endpoint, probe_image
):
    model = Model(image_uri=probe_image, role=ROLE, env={"PROBE_TAG": "sdk"}, sagemaker_session=sdk_session)
    model.deploy(
        endpoint_name=endpoint,
        instance_type=INSTANCE_TYPE,
        initial_instance_count=1,
        endpoint_type=EndpointType.INFERENCE_COMPONENT_BASED,
        resources=ResourceRequirements(requests={"memory": 1024, "num_cpus": 1, "copies": 1}),
    )
    name = model.inference_component_name
    try:
        predictor = Predictor(
            endpoint,
            sagemaker_session=sdk_session,
            component_name=name,
            serializer=JSONSerializer(),
            deserializer=JSONDeserializer(),
        )
        assert predictor.predict({})["tag"] == "sdk"
        described = sagemaker.describe_inference_component(InferenceComponentName=name)
        assert described["Specification"]["ComputeResourceRequirements"]["NumberOfCpuCoresRequired"] == 1
    finally:
        sagemaker.delete_inference_component(InferenceComponentName=name)
        wait_until(lambda: gone(sagemaker, name), timeout=60, what=f"{name} deleted")
