"""The API's port serves InvokeEndpoint too (containers reach only it): the runtime operations
Sageport does not serve answer there as on the data plane, 501 NotImplementedException, the
answer the API gives an unserved SageMaker operation (protocol/dispatch.py)."""

import pytest
from botocore.exceptions import ClientError
from django.test import Client

from hosting.runtime_api import contract
from tests.unit.hosting.runtime_api.unserved import unserved_calls
from tests.unit.protocol.conftest import access_key, make_client  # noqa: F401  (fixtures)


def test_unserved_runtime_operations_answer_501_on_the_api_port(make_client):  # noqa: F811
    client, transport = make_client("sagemaker-runtime")
    calls = unserved_calls(client)
    assert set(calls) == {operation for _, operation in contract.unserved_paths()}
    for operation, call in calls.items():
        with pytest.raises(ClientError) as raised:
            call()
        error = raised.value.response
        assert error["ResponseMetadata"]["HTTPStatusCode"] == 501
        assert error["Error"]["Code"] == "NotImplementedException"
        assert error["Error"]["Message"] == (
            f"Sageport serves SageMakerRuntime.{operation} on the runtime port (the data plane) only."
            if operation in contract.DATA_PLANE_ONLY
            else f"Sageport does not implement SageMakerRuntime.{operation}"
        )
        assert transport.responses[-1]["Content-Type"] == "application/json"


def test_an_unsigned_one_is_refused_first(db):
    answer = Client().post("/endpoints/e/invocations-response-stream")
    assert (answer.status_code, answer["X-Amzn-ErrorType"]) == (403, "MissingAuthenticationTokenException")
