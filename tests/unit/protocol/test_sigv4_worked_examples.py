"""Worked examples: requests captured from boto3 at a fixed clock reproduce their signatures."""

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from protocol import sigv4

CAPTURE_TIME = datetime(2024, 1, 15, 12, 0, 0)
KEY_ID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


class _Empty:
    def stream(self):
        yield b"{}"


def capture(service, call, *, endpoint_url="http://127.0.0.1:5005", region="us-east-1", **credentials):
    """Return the request boto3 would send for `call(client)`, signed at CAPTURE_TIME."""
    client = boto3.client(
        service,
        endpoint_url=endpoint_url,
        region_name=region,
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
        **credentials,
    )
    sent = []

    def record(request, **kwargs):
        sent.append(request)
        return AWSResponse(request.url, 200, {}, _Empty())

    client.meta.events.register("before-send", record)
    call(client)
    prepared = sent[0]
    path = prepared.url.split("5005", 1)[1]
    headers = {
        name.lower(): value.decode() if isinstance(value, bytes) else value
        for name, value in prepared.headers.items()
    }
    headers["host"] = "127.0.0.1:5005"  # urllib3 adds Host on the wire
    return sigv4.SignedRequest(prepared.method, path, headers, prepared.body or b"")


@pytest.fixture(autouse=True)
def frozen_signing_clock(monkeypatch):
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: CAPTURE_TIME)


def verify(request, **overrides):
    options = dict(
        signing_name="sagemaker",
        resolve=lambda key_id: (SECRET, "123456789012") if key_id == KEY_ID else None,
        now=CAPTURE_TIME.replace(tzinfo=UTC),
        max_skew=timedelta(minutes=15),
    )
    return sigv4.verify(request, **{**options, **overrides})


def test_describe_endpoint_capture_reproduces_canonical_request_and_signature():
    request = capture("sagemaker", lambda sm: sm.describe_endpoint(EndpointName="my-endpoint"))
    authorization = sigv4.parse_authorization(request.headers["authorization"])

    assert sigv4.canonical_request(request, authorization) == (
        "POST\n/\n\n"
        "content-type:application/x-amz-json-1.1\nhost:127.0.0.1:5005\n"
        "x-amz-date:20240115T120000Z\nx-amz-target:SageMaker.DescribeEndpoint\n\n"
        "content-type;host;x-amz-date;x-amz-target\n"
        "c1625e6c27e5c93a4dafa6037184855d34ffd39b8eb533b6878efcb9edf43897"
    )
    expected = "e78e4986a62d0bea1020997fef655d40e65a184ba57cb78d4c0f6ef79a9318d4"
    assert authorization.signature == expected
    assert sigv4.compute_signature(request, authorization, "20240115T120000Z", SECRET) == expected
    context = verify(request)
    assert (context.account_id, context.region, context.access_key_id) == (
        "123456789012",
        "us-east-1",
        KEY_ID,
    )


def test_invoke_endpoint_capture_collapses_header_whitespace_and_reproduces_signature():
    request = capture(
        "sagemaker-runtime",
        lambda rt: rt.invoke_endpoint(
            EndpointName="my-endpoint",
            Body=b"1,2,3",
            ContentType="text/csv",
            Accept="application/json",
            CustomAttributes="a  b   c",
        ),
    )
    authorization = sigv4.parse_authorization(request.headers["authorization"])

    assert sigv4.canonical_request(request, authorization) == (
        "POST\n/endpoints/my-endpoint/invocations\n\n"
        "accept:application/json\ncontent-type:text/csv\nhost:127.0.0.1:5005\n"
        "x-amz-date:20240115T120000Z\nx-amzn-sagemaker-custom-attributes:a b c\n\n"
        "accept;content-type;host;x-amz-date;x-amzn-sagemaker-custom-attributes\n"
        "8a6ae15122001229edb8866f56e342af12ae8187203c3e3b33931743e7c0c48d"
    )
    expected = "fa21147e261430f526f97f6a04f078fcaba9d3a5b17c06b3c48aa5729ef33b71"
    assert sigv4.compute_signature(request, authorization, "20240115T120000Z", SECRET) == expected
    verify(request)


def test_prefixed_endpoint_with_session_token_reproduces_signature_but_a_foreign_token_is_refused():
    request = capture(
        "sagemaker",
        lambda sm: sm.list_models(),
        endpoint_url="http://127.0.0.1:5005/prefix/",
        region="eu-west-1",
        aws_session_token="TOKEN123",
    )
    authorization = sigv4.parse_authorization(request.headers["authorization"])

    assert request.raw_target == "/prefix/"
    assert authorization.signed_headers == (
        "content-type",
        "host",
        "x-amz-date",
        "x-amz-security-token",
        "x-amz-target",
    )
    expected = "0f704edfc064dcc9273b640a7b22a694ca063fc060d15ae44589c0d3e6f00cd0"
    assert authorization.signature == expected
    assert sigv4.compute_signature(request, authorization, "20240115T120000Z", SECRET) == expected
    # Not the key's own session token: a correctly signed request carrying it is still refused.
    with pytest.raises(sigv4.UnrecognizedClient, match="security token included in the request is invalid"):
        verify(request)


def test_a_request_with_its_keys_own_session_token_is_accepted():
    """What a container's SDK sends with the credentials endpoint's key and Token."""
    request = capture(
        "sagemaker", lambda sm: sm.list_models(), aws_session_token=sigv4.session_token_for(SECRET)
    )
    assert "x-amz-security-token" in request.headers
    assert verify(request).account_id == "123456789012"
    other_key_token = sigv4.session_token_for(SECRET + "x")
    forged = capture("sagemaker", lambda sm: sm.list_models(), aws_session_token=other_key_token)
    with pytest.raises(sigv4.UnrecognizedClient):
        verify(forged)


def test_unsigned_headers_added_after_signing_do_not_affect_verification():
    request = capture("sagemaker", lambda sm: sm.describe_endpoint(EndpointName="my-endpoint"))
    headers = {**request.headers, "user-agent": "something else", "x-forwarded-for": "10.0.0.1"}

    context = verify(sigv4.SignedRequest(request.method, request.raw_target, headers, request.body))

    assert context.account_id == "123456789012"


def test_a_changed_body_is_rejected_with_invalid_signature():
    request = capture("sagemaker", lambda sm: sm.describe_endpoint(EndpointName="my-endpoint"))
    tampered = sigv4.SignedRequest(
        request.method, request.raw_target, request.headers, b'{"EndpointName": "x"}'
    )

    with pytest.raises(sigv4.InvalidSignature, match="does not match"):
        verify(tampered)


def test_credentials_scoped_to_another_service_are_rejected():
    request = capture("sagemaker", lambda sm: sm.describe_endpoint(EndpointName="my-endpoint"))

    with pytest.raises(
        sigv4.InvalidSignature, match="Credential should be scoped to correct service: 'logs'"
    ):
        verify(request, signing_name="logs")


def test_signatures_older_than_the_skew_window_are_expired():
    request = capture("sagemaker", lambda sm: sm.describe_endpoint(EndpointName="my-endpoint"))

    with pytest.raises(sigv4.InvalidSignature) as raised:
        verify(request, now=CAPTURE_TIME.replace(tzinfo=UTC) + timedelta(minutes=16))
    assert raised.value.message == (
        "Signature expired: 20240115T120000Z is now earlier than 20240115T120100Z "
        "(20240115T121600Z - 15 min.)"
    )


def test_signatures_from_the_future_beyond_the_window_are_rejected():
    request = capture("sagemaker", lambda sm: sm.describe_endpoint(EndpointName="my-endpoint"))

    with pytest.raises(sigv4.InvalidSignature, match="Signature not yet current"):
        verify(request, now=CAPTURE_TIME.replace(tzinfo=UTC) - timedelta(minutes=16))
