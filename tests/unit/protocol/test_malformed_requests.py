"""Client mistakes are 4xx AWS errors (never a 500, which botocore retries), found before any
work is done, and no error is larger than it needs to be. The real handlers run."""

import base64
import json

import pytest
from django.test import Client

from logs.models import LogStream
from tests.unit.protocol.conftest import REGION

LOGS = "Logs_20140328"


def error_of(response) -> tuple[int, str, str]:
    body = json.loads(response.content)
    assert response["X-Amzn-ErrorType"] == body["__type"]
    return response.status_code, body["__type"], body["Message"]


def nested(depth: int) -> bytes:
    return b'{"NameContains": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize("depth", [65, 400, 100_000])
def test_deeply_nested_json_is_a_serialization_exception(signed_post, depth):
    status, code, message = error_of(signed_post("SageMaker.ListModels", nested(depth)))

    assert (status, code) == (400, "SerializationException")
    assert message == "The request body nests JSON deeper than 64 levels."


def test_nesting_within_the_limit_is_read_and_validated(signed_post):
    status, code, _ = error_of(signed_post("SageMaker.ListModels", nested(60)))

    assert (status, code) == (400, "ValidationException")


@pytest.mark.parametrize("digits", [65, 4_301, 100_000])
def test_numbers_too_long_to_be_any_model_type_are_a_serialization_exception(signed_post, digits):
    body = b'{"MaxResults": ' + b"9" * digits + b"}"

    status, code, message = error_of(signed_post("SageMaker.ListModels", body))

    assert (status, code) == (400, "SerializationException")
    assert message.startswith(f"The request body has a number written with {digits} characters")


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**63, 10**60])
def test_integers_beyond_the_member_s_type_are_a_validation_exception(signed_post, value):
    status, code, message = error_of(signed_post("SageMaker.ListModels", b'{"MaxResults": %d}' % value))

    assert (status, code) == (400, "ValidationException")
    assert message == (
        f"1 validation error detected: Value '{value}' at 'maxResults' failed to satisfy constraint: "
        "Member must be of type integer"
    )


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_json_number_literals_are_a_serialization_exception(signed_post, literal):
    status, code, _ = error_of(signed_post("SageMaker.ListModels", b'{"MaxResults": ' + literal + b"}"))

    assert (status, code) == (400, "SerializationException")


def offset_token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


@pytest.mark.parametrize("offset", [2**63, 2**64 + 5, 2**53 + 1])
def test_next_token_offsets_beyond_any_listing_are_a_validation_exception(make_client, offset):
    client, transport = make_client()

    with pytest.raises(client.exceptions.ClientError):
        client.list_models(NextToken=offset_token(offset))
    status, code, message = error_of(transport.responses[0])
    assert (status, code, message) == (400, "ValidationException", "The provided NextToken is not valid.")


@pytest.mark.parametrize(
    "token", ["f/9999999999999999999/1", "f/1/9999999999999999999", "b/-9223372036854775809/1"]
)
def test_logs_tokens_beyond_64_bits_are_an_invalid_parameter_exception(make_client, access_key, token):
    stream = LogStream.objects.create(
        account_id=access_key.account_id,
        region=REGION,
        group_name="/aws/sagemaker/TrainingJobs",
        stream_name="s",
    )
    stream.events.create(timestamp_ms=1, ingestion_time_ms=1, message="line")
    logs, _ = make_client("logs")

    with pytest.raises(logs.exceptions.InvalidParameterException) as raised:
        logs.get_log_events(logGroupName=stream.group_name, logStreamName="s", nextToken=token)
    assert raised.value.response["Error"]["Message"] == "The specified nextToken is invalid."


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        ("DescribeLogStreams", '{"logGroupName": "g", "logStreamNamePrefix": "\\ud800"}'),
        ("FilterLogEvents", '{"logGroupName": "g", "filterPattern": "x\\udfffy"}'),
        ("GetLogEvents", '{"logGroupName": "g", "logStreamName": "s", "\\ud800": 1}'),
    ],
)
def test_lone_surrogates_are_a_serialization_exception(signed_post, operation, body):
    status, code, message = error_of(signed_post(f"{LOGS}.{operation}", body.encode()))

    assert (status, code) == (400, "SerializationException")
    assert "lone UTF-16 surrogate" in message


def test_escaped_surrogate_pairs_are_ordinary_characters(make_client):
    logs, _ = make_client("logs")

    with pytest.raises(logs.exceptions.ResourceNotFoundException):
        logs.describe_log_streams(logGroupName="g", logStreamNamePrefix="\U0001f600")


def test_a_body_over_the_size_limit_is_refused_before_it_is_read(signed_post, settings):
    body = b'{"NameContains": "' + b"a" * (7 * 1024 * 1024) + b'"}'

    status, code, message = error_of(signed_post("SageMaker.ListModels", body))

    assert (status, code) == (413, "RequestEntityTooLargeException")
    limit = settings.SAGEPORT_MAX_REQUEST_BYTES
    assert message == f"Request must be smaller than {limit} bytes for the ListModels operation."


def test_the_size_limit_is_a_setting(signed_post, settings):
    settings.SAGEPORT_MAX_REQUEST_BYTES = 100

    assert error_of(signed_post("SageMaker.ListModels", b'{"NameContains": "' + b"a" * 100 + b'"}'))[:2] == (
        413,
        "RequestEntityTooLargeException",
    )


def test_a_large_invalid_value_is_quoted_only_in_part(signed_post):
    body = json.dumps({"ModelName": "a_" * 3_000_000}).encode()  # 6 MB

    response = signed_post("SageMaker.DescribeModel", body)

    status, code, message = error_of(response)
    assert (status, code) == (400, "ValidationException")
    assert message.startswith("2 validation errors detected: Value 'a_a_a_")
    assert "...' at 'modelName' failed to satisfy constraint" in message
    assert len(response.content) < 1_000


def test_thousands_of_invalid_members_make_a_bounded_error_that_counts_them_all(signed_post):
    body = json.dumps({f"Unknown{index}": "x" * 1000 for index in range(5_000)}).encode()

    response = signed_post("SageMaker.ListModels", body)

    status, code, message = error_of(response)
    assert (status, code) == (400, "ValidationException")
    assert message.startswith("5000 validation errors detected: ")
    assert message.endswith("; and 4980 more")
    assert len(response.content) < 10_000


# --- Every answer on the API port is AWS JSON, never one of Django's own pages ----------------


def assert_aws_json_error(response, status: int, code: str, content_type: str):
    assert response.status_code == status
    assert response["Content-Type"] == content_type
    body = json.loads(response.content)
    assert (body["__type"], response["X-Amzn-ErrorType"]) == (code, code)
    assert body["Message"]
    assert response["x-amzn-RequestId"]


@pytest.mark.parametrize("method", ["get", "put", "delete", "options"])
def test_wrong_method_on_the_runtime_path_is_a_rest_json_error(db, method):
    response = getattr(Client(), method)("/endpoints/e1/invocations")

    assert_aws_json_error(response, 400, "UnknownOperationException", "application/json")


@pytest.mark.parametrize("path", ["/no/such/path", "/admin", "/favicon.ico"])
@pytest.mark.parametrize("method", ["get", "post", "put"])
def test_paths_without_a_target_answer_aws_json(db, path, method):
    response = getattr(Client(), method)(path)

    assert_aws_json_error(response, 400, "UnknownOperationException", "application/x-amz-json-1.1")


@pytest.mark.parametrize("method", ["post", "put"])
def test_the_root_answers_aws_json_to_anything_but_a_browser(db, method):
    response = getattr(Client(), method)("/")

    assert_aws_json_error(response, 400, "UnknownOperationException", "application/x-amz-json-1.1")


def test_the_root_answers_aws_json_to_a_get_with_aws_credentials(db):
    response = Client().get("/", headers={"Authorization": "AWS4-HMAC-SHA256 Credential=AKIA/x"})

    assert_aws_json_error(response, 400, "UnknownOperationException", "application/x-amz-json-1.1")


def test_the_root_sends_a_browser_to_the_console(db):
    response = Client().get("/")

    assert (response.status_code, response["Location"]) == (302, "/console/")


def test_static_files_are_served_and_a_missing_one_is_a_plain_404(db):
    found = Client().get("/static/console/console.css")
    missing = Client().get("/static/console/no-such-file.css")

    assert (found.status_code, found["Content-Type"].split(";")[0]) == (200, "text/css")
    assert missing.status_code == 404 and "X-Amzn-ErrorType" not in missing


def test_a_target_is_dispatched_to_the_json_api_on_any_path(db):
    response = Client().post("/admin/login/", headers={"X-Amz-Target": "SageMaker.ListModels"})

    assert_aws_json_error(response, 403, "MissingAuthenticationTokenException", "application/x-amz-json-1.1")


@pytest.mark.parametrize("operation", ["invocations", "invocations-response-stream", "async-invocations"])
def test_a_form_body_on_a_runtime_path_is_the_runtime_s_not_the_query_protocol_s(db, operation):
    """A model may take a form (ContentType is the caller's): every runtime path answers it."""
    response = Client().post(f"/endpoints/e1/{operation}", "a=1&Action=ListUsers",
                             content_type="application/x-www-form-urlencoded")

    assert_aws_json_error(response, 403, "MissingAuthenticationTokenException", "application/json")


def test_an_invalid_host_on_the_runtime_path_is_a_rest_json_error(db):
    response = Client().post("/endpoints/e1/invocations", HTTP_HOST="bad host!")

    assert_aws_json_error(response, 400, "SerializationException", "application/json")


def test_a_failure_outside_the_views_is_an_internal_failure_in_json(db, monkeypatch):
    def broken(self, request):
        raise RuntimeError("boom")

    monkeypatch.setattr("hosting.runtime_api.api_port.RuntimeApiMiddleware.__call__", broken)

    response = Client(raise_request_exception=False).post("/endpoints/e1/invocations")

    assert_aws_json_error(response, 500, "InternalFailure", "application/json")


def test_the_admin_site_keeps_its_own_pages(db):
    assert Client().get("/admin/login/")["Content-Type"].startswith("text/html")
