"""SigV4 as AWS enforces it: a captured or half-signed request cannot be re-aimed, re-filled or
passed off under a forged token or scope. The real handlers run (no stubs),
so a forgery that got through would change the database these tests look at."""

import json
from email.utils import formatdate
from hashlib import sha256

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from django.test import Client

from hosting.models import SageMakerModel
from tests.unit.hosting.runtime_api.api_port_app import serve_with
from tests.unit.protocol.conftest import ENDPOINT_URL, REGION, replay

ROLE = "arn:aws:iam::210987654321:role/SageMakerRole"


@pytest.fixture
def victim(make_client):
    """A model that forged requests try to delete."""
    client, _ = make_client()
    client.create_model(ModelName="victim", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "busybox"})
    return "victim"


def victim_exists() -> bool:
    return SageMakerModel.objects.filter(model_name="victim").exists()


def sign(access_key, headers: dict, body: bytes, *, path: str = "/", after_signing: dict | None = None):
    """A request signed over `headers` and `body`; `after_signing` headers are added unsigned."""
    request = AWSRequest("POST", ENDPOINT_URL + path, headers=headers, data=body)
    SigV4Auth(
        Credentials(access_key.access_key_id, access_key.secret_access_key), "sagemaker", REGION
    ).add_auth(request)
    for name, value in (after_signing or {}).items():
        request.headers[name] = value
    return request.prepare()


def json_headers(target: str | None = None) -> dict:
    headers = {"Content-Type": "application/x-amz-json-1.1"}
    if target:
        headers["X-Amz-Target"] = target
    return headers


def error_of(response) -> tuple[int, str, str]:
    body = json.loads(response.content)
    assert response["X-Amzn-ErrorType"] == body["__type"]
    return response.status_code, body["__type"], body["Message"]


def test_a_target_outside_the_signature_is_refused(access_key, victim):
    request = sign(
        access_key,
        json_headers(),
        b'{"ModelName": "victim"}',
        after_signing={"X-Amz-Target": "SageMaker.DescribeModel"},
    )

    status, code, message = error_of(replay(Client(), request))

    assert (status, code) == (403, "IncompleteSignatureException")
    assert "'x-amz-target'" in message


def test_a_request_whose_target_was_not_signed_cannot_be_replayed_as_another_operation(access_key, victim):
    """A DescribeModel signed without its target, re-sent as DeleteModel: the model stays."""
    request = sign(
        access_key,
        json_headers(),
        b'{"ModelName": "victim"}',
        after_signing={"X-Amz-Target": "SageMaker.DeleteModel"},
    )

    status, code, _ = error_of(replay(Client(), request))

    assert (status, code) == (403, "IncompleteSignatureException")
    assert victim_exists()


def test_a_signed_describe_replayed_with_the_target_changed_is_refused(access_key, victim):
    request = sign(access_key, json_headers("SageMaker.DescribeModel"), b'{"ModelName": "victim"}')
    request.headers["X-Amz-Target"] = "SageMaker.DeleteModel"

    status, code, _ = error_of(replay(Client(), request))

    assert (status, code) == (403, "InvalidSignatureException")
    assert victim_exists()


def test_a_body_swapped_under_a_signed_content_hash_is_refused(access_key, victim):
    """The signature covers the X-Amz-Content-SHA256 header, which must be the body's hash."""
    signed_body = b'{"ModelName": "someone-else"}'
    request = sign(
        access_key,
        {**json_headers("SageMaker.DeleteModel"), "X-Amz-Content-SHA256": sha256(signed_body).hexdigest()},
        signed_body,
    )
    request.body = b'{"ModelName": "victim"}'

    status, code, message = error_of(replay(Client(), request))

    assert (status, code) == (403, "InvalidSignatureException")
    assert message == "The provided 'x-amz-content-sha256' header does not match what was computed."
    assert victim_exists()


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/", json_headers("SageMaker.DeleteModel")),
        ("/endpoints/e1/invocations", {"Content-Type": "text/csv"}),
    ],
    ids=["json-api", "runtime-api"],
)
def test_unsigned_payload_is_refused(access_key, victim, path, headers):
    request = sign(access_key, {**headers, "X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"}, b"", path=path)
    request.body = b'{"ModelName": "victim"}'

    status, code, message = error_of(replay(Client(), request))

    assert (status, code) == (403, "InvalidSignatureException")
    assert message.startswith("UNSIGNED-PAYLOAD is not accepted")
    assert victim_exists()


def test_a_security_token_is_refused_as_invalid(make_client, victim):
    client, _ = make_client(session_token="FwoGZXIvYXdzEGarbage")

    with pytest.raises(ClientError) as raised:
        client.delete_model(ModelName="victim")
    assert raised.value.response["Error"] == {
        "Code": "UnrecognizedClientException",
        "Message": "The security token included in the request is invalid.",
    }
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert victim_exists()


@pytest.mark.parametrize("region", ["moon", "us-east-1x", "a" * 63, "xx-fake-9", "us-east-99"])
def test_a_scope_whose_region_aws_does_not_have_is_refused(make_client, victim, region):
    """AWS refuses a scope naming a region it does not have: 403, "Credential should be scoped to a
    valid region, not 'wrong-region'." (SQS's SignatureDoesNotMatch, as an AWS SDK reported it);
    for JSON services the code is InvalidSignatureException. Nothing is done, nothing written."""
    client, _ = make_client(region=region)

    with pytest.raises(ClientError) as raised:
        client.delete_model(ModelName="victim")
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    error = raised.value.response["Error"]
    assert error["Code"] == "InvalidSignatureException"
    shown = region if len(region) < 60 else error["Message"].split("'")[1]
    assert error["Message"] == f"Credential should be scoped to a valid region, not '{shown}'."
    assert victim_exists()


def test_the_stacks_own_region_is_accepted_whatever_it_is(make_client, settings):
    settings.SAGEPORT_REGION = "xx-local-1"  # an operator's choice, written into the stack's own ARNs
    client, _ = make_client(region="xx-local-1")

    assert client.list_models()["ResponseMetadata"]["HTTPStatusCode"] == 200


@pytest.mark.parametrize(
    "region", ["us-east-1", "us-gov-west-1", "cn-north-1", "eusc-de-east-1", "il-central-1"]
)
def test_every_partition_s_region_names_are_accepted(make_client, victim, region):
    client, _ = make_client(region=region)

    assert client.list_models()["ResponseMetadata"]["HTTPStatusCode"] == 200


@pytest.mark.parametrize(
    "header",
    ["Content-Type", "X-Amzn-SageMaker-Custom-Attributes", "X-Amzn-SageMaker-Target-Variant", "Accept"],
)
def test_runtime_headers_forwarded_to_the_model_must_be_signed(access_key, header):
    request = sign(
        access_key, {}, b"1,2,3", path="/endpoints/e1/invocations", after_signing={header: "text/x-forged"}
    )

    status, code, message = error_of(replay(Client(), request))

    assert (status, code) == (403, "IncompleteSignatureException")
    assert f"'{header.lower()}'" in message


class _NoEndpoints:
    def lookup(self, arn):
        return None

    def route(self, arn):
        return None


def test_stock_botocore_runtime_requests_with_every_header_pass_authentication(make_client, monkeypatch):
    """botocore signs every header it sends, so its requests meet the stricter rules."""
    runtime, _ = make_client("sagemaker-runtime")

    with serve_with(monkeypatch, _NoEndpoints()), pytest.raises(runtime.exceptions.ValidationError) as raised:
        runtime.invoke_endpoint(
            EndpointName="e1",
            Body=b"1,2,3",
            ContentType="text/csv",
            Accept="application/json",
            CustomAttributes="a  b",
            TargetModel="model.tar.gz",
            TargetVariant="v1",
            TargetContainerHostname="c1",
            InferenceId="i1",
            EnableExplanations="`true`",
            InferenceComponentName="ic",
            SessionId="NEW_SESSION",
        )
    assert raised.value.response["Error"]["Message"] == "Endpoint e1 of account 210987654321 not found."


def test_a_date_header_used_as_the_signing_time_must_be_signed(access_key, victim):
    """Without X-Amz-Date the Date header is the signing time: unsigned, it could be refreshed
    on a captured request forever."""
    request = sign(access_key, json_headers("SageMaker.DeleteModel"), b'{"ModelName": "victim"}')
    del request.headers["X-Amz-Date"]
    request.headers["Date"] = formatdate(usegmt=True)

    status, code, message = error_of(replay(Client(), request))

    assert (status, code) == (403, "IncompleteSignatureException")
    assert "'date'" in message
    assert victim_exists()
