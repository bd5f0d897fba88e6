"""The JSON 1.1 endpoint: dispatch on X-Amz-Target, response and error formats."""

import json
import uuid
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import pytest
from botocore.exceptions import ClientError
from django.test import Client

from protocol.errors import ServiceError


def test_success_response_carries_aws_headers_and_epoch_timestamps(make_client, handlers):
    created = datetime(2024, 1, 15, 12, 0, 0, 123456, tzinfo=UTC)
    handlers("DescribeEndpoint")(
        lambda ctx, params: {
            "EndpointName": "e1",
            "CreationTime": created,
            "FailureReason": None,
            "ProductionVariants": [{"VariantName": "v1", "CurrentInstanceCount": None}],
        }
    )
    client, transport = make_client()

    described = client.describe_endpoint(EndpointName="e1")

    response = transport.responses[0]
    assert json.loads(response.content) == {
        "EndpointName": "e1",
        "CreationTime": 1705320000.123,
        "ProductionVariants": [{"VariantName": "v1"}],
    }
    assert response["Content-Type"] == "application/x-amz-json-1.1"
    assert response["Content-Length"] == str(len(response.content))
    assert parsedate_to_datetime(response["Date"]).tzinfo is not None
    assert str(uuid.UUID(response["x-amzn-RequestId"])) == described["ResponseMetadata"]["RequestId"]
    assert described["CreationTime"] == created.replace(microsecond=123000)


def test_operation_without_output_returns_an_empty_object(make_client, handlers):
    handlers("DeleteEndpoint")(lambda ctx, params: None)
    client, transport = make_client()

    client.delete_endpoint(EndpointName="e1")
    assert transport.responses[0].content == b"{}"


def test_handler_receives_validated_params_with_timestamps_as_datetimes(make_client, handlers):
    received = []
    handlers("ListTrainingJobs")(lambda ctx, params: received.append(params) or {"TrainingJobSummaries": []})
    client, _ = make_client()

    client.list_training_jobs(CreationTimeAfter=datetime(2024, 1, 15, tzinfo=UTC), MaxResults=5)
    assert received == [{"CreationTimeAfter": datetime(2024, 1, 15, tzinfo=UTC), "MaxResults": 5}]


class ResourceNotFound(ServiceError):
    """A modeled SageMaker error no handler raises today: the wire format is the same for all."""

    code = "ResourceNotFound"
    status = 400


def test_service_error_becomes_modeled_exception_with_type_message_and_header(make_client, handlers):
    def describe(ctx, params):
        raise ResourceNotFound("Requested resource not found.")

    handlers("DescribeTrainingJob")(describe)
    client, transport = make_client()

    with pytest.raises(client.exceptions.ResourceNotFound) as raised:
        client.describe_training_job(TrainingJobName="j1")
    assert raised.value.response["Message"] == "Requested resource not found."
    response = transport.responses[0]
    assert response.status_code == 400
    assert response["X-Amzn-ErrorType"] == "ResourceNotFound"
    assert json.loads(response.content) == {
        "__type": "ResourceNotFound",
        "Message": "Requested resource not found.",
    }


def test_unknown_operation_is_rejected_with_unknown_operation_exception(make_client):
    client, _ = make_client()

    def rename_target(request, **kwargs):
        request.headers.replace_header("X-Amz-Target", "SageMaker.MakeCoffee")

    client.meta.events.register("before-sign", rename_target)
    with pytest.raises(ClientError) as raised:
        client.list_models()
    assert raised.value.response["Error"]["Code"] == "UnknownOperationException"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_unknown_target_prefix_is_rejected_with_unknown_operation_exception(signed_post):
    response = signed_post("DynamoDB_20120810.ListTables", b"{}")

    assert response.status_code == 400
    assert json.loads(response.content)["__type"] == "UnknownOperationException"


def test_unimplemented_operation_answers_501_naming_it(make_client, handlers):
    client, _ = make_client()

    with pytest.raises(ClientError) as raised:
        client.list_notebook_instances()
    error = raised.value.response["Error"]
    assert (error["Code"], error["Message"]) == (
        "NotImplementedException",
        "Sageport does not implement SageMaker.ListNotebookInstances",
    )
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 501


def test_constraint_violations_botocore_does_not_check_answer_validation_exception(make_client, handlers):
    handlers("DescribeTrainingJob")(lambda ctx, params: pytest.fail("handler must not run"))
    client, _ = make_client()

    with pytest.raises(ClientError) as raised:
        client.describe_training_job(TrainingJobName="a_b")
    assert raised.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "1 validation error detected: Value 'a_b' at 'trainingJobName' failed to satisfy "
        "constraint: Member must satisfy regular expression pattern: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
    }


@pytest.mark.parametrize("body", [b"[1, 2]", b"not json", b"\xff\xfe"])
def test_body_that_is_not_a_json_object_is_a_serialization_exception(signed_post, handlers, body):
    handlers("ListModels")(lambda ctx, params: {"Models": []})

    response = signed_post("SageMaker.ListModels", body)

    assert response.status_code == 400
    assert json.loads(response.content)["__type"] == "SerializationException"


@pytest.mark.parametrize("content_type", ["application/json", "application/x-amz-json-1.0"])
def test_lenient_json_content_types_and_empty_body_are_accepted(signed_post, handlers, content_type):
    handlers("ListModels")(lambda ctx, params: {"Models": [], "Params": params})

    response = signed_post("SageMaker.ListModels", b"", content_type=content_type)

    assert (response.status_code, json.loads(response.content)) == (200, {"Models": [], "Params": {}})


def test_other_content_types_are_a_serialization_exception(signed_post, handlers):
    handlers("ListModels")(lambda ctx, params: {"Models": []})

    response = signed_post("SageMaker.ListModels", b"{}", content_type="text/plain")

    assert json.loads(response.content)["__type"] == "SerializationException"


def test_unexpected_handler_failure_is_an_internal_failure_without_traceback(signed_post, handlers, caplog):
    def broken(ctx, params):
        raise RuntimeError("secret internals")

    handlers("ListModels")(broken)

    response = signed_post("SageMaker.ListModels", b"{}")

    body = json.loads(response.content)
    assert (response.status_code, body["__type"]) == (500, "InternalFailure")
    assert "secret internals" not in response.content.decode()
    assert response["x-amzn-RequestId"] in caplog.text


def test_admin_is_served_beside_the_protocol_endpoint(db):
    assert Client().get("/admin/login/").status_code == 200
