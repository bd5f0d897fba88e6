"""InvokeEndpointWithResponseStream end to end: the example streaming image
(examples/token-stream) behind a live endpoint, read with stock boto3 and the SageMaker SDK (v2)
`Predictor.predict_stream`; the first token reaches the client while the container still holds
the rest back (it waits for a second request), and a container killed mid-stream ends the
stream with ModelStreamError, and a blue/green update under streaming load fails no stream (the
old container's drain waits for its open streams)."""

import json

import docker
import pytest
from botocore.exceptions import ClientError, EventStreamError
from sagemaker.base_predictor import Predictor

from tests.e2e.hosting import Load, wait_for_endpoint, wait_until

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # hosting, runtime, stream_image


def _endpoint(sagemaker, hosting, image: str) -> str:
    model = hosting.model(image)
    name = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))
    wait_for_endpoint(sagemaker, name)
    return name


def _request(prompt: str, **parameters) -> bytes:
    return json.dumps({"inputs": prompt, "parameters": {"max_new_tokens": 12, **parameters}}).encode()


def _parts(events) -> list[bytes]:
    return [event["PayloadPart"]["Bytes"] for event in events]


def test_tokens_stream_in_order_to_boto3_and_the_sdk_first_token_before_the_rest_exists(
    sagemaker, runtime, sdk_session, stream_image, hosting
):
    name = _endpoint(sagemaker, hosting, stream_image)
    whole = runtime.invoke_endpoint(EndpointName=name, Body=_request("hello"))["Body"].read()

    answer = runtime.invoke_endpoint_with_response_stream(
        EndpointName=name, Body=_request("hello"), ContentType="application/json", Accept="text/plain"
    )
    parts = _parts(answer["Body"])
    assert b"".join(parts) == whole and len(whole.split()) == 12
    assert len(parts) > 1  # a part per chunk, not the answer in one piece
    assert answer["ContentType"] == "text/plain; charset=utf-8"
    assert answer["InvokedProductionVariant"] == "AllTraffic"

    # The container writes its second token only once a second request releases it: the first
    # token can reach the client only if it is forwarded before the rest is made.
    held = iter(runtime.invoke_endpoint_with_response_stream(
        EndpointName=name, Body=_request("hello", hold="first"))["Body"])
    first = next(held)["PayloadPart"]["Bytes"]
    assert first == whole.split(b" ")[0] + b" "
    runtime.invoke_endpoint(EndpointName=name, Body=json.dumps({"release": "first"}))
    assert first + b"".join(_parts(held)) == whole

    predictor = Predictor(name, sagemaker_session=sdk_session)
    assert b"".join(predictor.predict_stream(_request("hello"))) == whole


def test_a_container_killed_mid_stream_ends_it_with_model_stream_error(
    sagemaker, runtime, stream_image, hosting
):
    name = _endpoint(sagemaker, hosting, stream_image)
    arn = sagemaker.describe_endpoint(EndpointName=name)["EndpointArn"]
    events = iter(runtime.invoke_endpoint_with_response_stream(
        EndpointName=name, Body=_request("doomed", hold="never"))["Body"])
    assert next(events)["PayloadPart"]["Bytes"]

    docker.from_env().containers.list(filters={"label": f"sageport.resource={arn}"})[0].kill()
    with pytest.raises(EventStreamError) as raised:
        list(events)
    assert raised.value.response["Error"]["Code"] == "ModelStreamError"


def test_a_blue_green_update_under_streaming_load_fails_no_stream(
    sagemaker, stack, runtime, stream_image, hosting
):
    """Two clients stream back to back (20 tokens, 50 ms apart: a second each) while the endpoint
    moves to a new fleet: streams are open on the old container when it is drained."""
    name = _endpoint(sagemaker, hosting, stream_image)
    blue = _container_ids(sagemaker, name)
    request = _request("blue green", max_new_tokens=20, token_delay=0.05)
    whole = runtime.invoke_endpoint(EndpointName=name, Body=request)["Body"].read()

    def stream(client, endpoint_name: str) -> bytes:
        answer = client.invoke_endpoint_with_response_stream(EndpointName=endpoint_name, Body=request)
        return b"".join(_parts(answer["Body"]))

    green = hosting.config(("AllTraffic", hosting.model(stream_image, {"FLEET": "green"}), 1, 1.0))
    with Load(stack, name, threads=2, ask=stream) as load:
        wait_until(lambda: load.count >= 4, what="streams before the update")
        sagemaker.update_endpoint(EndpointName=name, EndpointConfigName=green)
        wait_until(lambda: sagemaker.describe_endpoint(EndpointName=name)["EndpointStatus"] == "Updating",
                   timeout=10, what="Updating")
        wait_for_endpoint(sagemaker, name, timeout=120)
        wait_until(lambda: not blue & _container_ids(sagemaker, name), what="the old container removed")
        seen = load.count
        wait_until(lambda: load.count >= seen + 4, what="streams after the update")

    assert load.failures == []
    assert set(load.tags) == {whole}


def _container_ids(sagemaker, name: str) -> set[str]:
    arn = sagemaker.describe_endpoint(EndpointName=name)["EndpointArn"]
    selector = {"label": f"sageport.resource={arn}"}
    return {c.id for c in docker.from_env().containers.list(filters=selector, ignore_removed=True)}


def test_stream_errors_before_the_stream_are_invoke_endpoints(stack, runtime):
    with pytest.raises(ClientError) as raised:
        runtime.invoke_endpoint_with_response_stream(EndpointName="no-such-endpoint", Body=b"{}")
    error = raised.value.response
    assert (error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Code"]) == (400, "ValidationError")
    assert error["Error"]["Message"] == f"Endpoint no-such-endpoint of account {stack.account_id} not found."
