"""SigV4 on the wire: every request is authenticated, errors are 403s."""

from datetime import UTC, datetime, timedelta

import pytest
from botocore import UNSIGNED
from botocore.exceptions import ClientError

from tests.unit.protocol.conftest import REGION


@pytest.fixture
def describe_endpoint(handlers):
    """A registered DescribeEndpoint that returns the request context it was given."""
    seen = []

    @handlers("DescribeEndpoint")
    def describe(ctx, params):
        seen.append(ctx)
        return {"EndpointName": params["EndpointName"]}

    return seen


def error_of(call) -> tuple[str, int, str]:
    with pytest.raises(ClientError) as raised:
        call()
    response = raised.value.response
    return (
        response["Error"]["Code"],
        response["ResponseMetadata"]["HTTPStatusCode"],
        response["Error"]["Message"],
    )


def test_signed_request_reaches_handler_with_account_region_and_key(
    make_client, access_key, describe_endpoint
):
    client, _ = make_client()

    assert client.describe_endpoint(EndpointName="e1")["EndpointName"] == "e1"
    [context] = describe_endpoint
    assert (context.account_id, context.region, context.access_key_id) == (
        "210987654321",
        REGION,
        access_key.access_key_id,
    )


def test_request_id_in_context_is_the_one_returned_to_the_client(make_client, describe_endpoint):
    client, _ = make_client()

    response = client.describe_endpoint(EndpointName="e1")
    assert response["ResponseMetadata"]["RequestId"] == describe_endpoint[0].request_id


@pytest.mark.parametrize("endpoint_url", ["http://127.0.0.1:5005/prefix/", "http://LocalHost:5005/a%20b//c"])
@pytest.mark.parametrize("raw_uri", [True, False], ids=["gunicorn-raw-uri", "decoded-path-fallback"])
def test_endpoint_url_paths_are_verified_as_signed(make_client, describe_endpoint, endpoint_url, raw_uri):
    client, _ = make_client(endpoint_url=endpoint_url, raw_uri=raw_uri)

    assert client.describe_endpoint(EndpointName="e1")["EndpointName"] == "e1"
    assert len(describe_endpoint) == 1  # the handler ran: the signature over the raw path held


def test_logs_requests_are_verified_with_the_logs_signing_name(make_client, handlers):
    handlers("DescribeLogGroups", service="Logs_20140328")(lambda ctx, params: {"logGroups": []})
    client, _ = make_client("logs")

    assert client.describe_log_groups()["logGroups"] == []


def test_missing_authorization_is_rejected_with_missing_authentication_token(make_client, describe_endpoint):
    client, _ = make_client(signature_version=UNSIGNED)

    assert error_of(lambda: client.describe_endpoint(EndpointName="e1")) == (
        "MissingAuthenticationTokenException",
        403,
        "Missing Authentication Token",
    )


def test_malformed_authorization_is_rejected_with_incomplete_signature(make_client, describe_endpoint):
    client, _ = make_client()

    def drop_signature(request, **kwargs):
        request.headers["Authorization"] = request.headers["Authorization"].split(b", Signature=")[0]

    client.meta.events.register_first("before-send", drop_signature)
    code, status, message = error_of(lambda: client.describe_endpoint(EndpointName="e1"))
    assert (code, status) == ("IncompleteSignatureException", 403)
    assert message == "Authorization header requires 'Signature' parameter."


def test_unknown_access_key_is_rejected_with_unrecognized_client(make_client, describe_endpoint):
    client, _ = make_client(key_id="AKIAUNKNOWNUNKNOWN00")

    assert error_of(lambda: client.describe_endpoint(EndpointName="e1")) == (
        "UnrecognizedClientException",
        403,
        "The security token included in the request is invalid.",
    )


def test_inactive_access_key_is_rejected_with_unrecognized_client(make_client, access_key, describe_endpoint):
    access_key.active = False
    access_key.save()
    client, _ = make_client()

    assert error_of(lambda: client.describe_endpoint(EndpointName="e1"))[:2] == (
        "UnrecognizedClientException",
        403,
    )


def test_wrong_secret_is_rejected_with_invalid_signature(make_client, describe_endpoint):
    client, _ = make_client(secret="not-the-secret")

    code, status, message = error_of(lambda: client.describe_endpoint(EndpointName="e1"))
    assert (code, status) == ("InvalidSignatureException", 403)
    assert message.startswith(
        "The request signature we calculated does not match the signature you provided."
    )


def test_clock_skew_beyond_the_window_is_rejected_as_expired(
    make_client, describe_endpoint, monkeypatch, settings
):
    settings.SAGEPORT_SIGV4_MAX_SKEW_SECONDS = 300
    twenty_minutes_ago = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=20)
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: twenty_minutes_ago)
    client, _ = make_client()

    code, status, message = error_of(lambda: client.describe_endpoint(EndpointName="e1"))
    assert (code, status) == ("InvalidSignatureException", 403)
    assert message.startswith(f"Signature expired: {twenty_minutes_ago:%Y%m%dT%H%M%SZ} is now earlier than ")
    assert message.endswith(" - 5 min.)")
    assert describe_endpoint == []
