"""InvokeEndpointAsync on the data plane with boto3, and the worker's processing of what it
queued, against an echoing model server (test_dataplane's) and an S3 kept in a dict."""

import pytest

from accounts import s3_tenancy
from devstack.stack import free_port
from hosting import async_tasks, async_worker
from hosting.models import AsyncInvocation, Endpoint, EndpointDeployment, ServingContainer
from storage.s3 import StorageError, parse_s3_uri
from tests.unit.hosting.runtime_api.test_dataplane import (  # noqa: F401
    data_plane,
    data_plane_server,
    error_of,
    model_port,
    runtime,
)
from tests.unit.hosting.runtime_api.test_routing import container, deployment, endpoint
from tests.unit.protocol.conftest import access_key, make_client  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

ASYNC = {"OutputConfig": {"S3OutputPath": "s3://out/r", "S3FailurePath": "s3://out/f"}}


@pytest.fixture
def store(monkeypatch):
    """S3 as a dict by URI; the input bucket `in`, the output bucket `out`; `theirs` is another
    account's. Drains run inline, as a worker would run them."""
    objects: dict[str, bytes] = {}

    def location(account_id, uri, action="read"):
        bucket, key = parse_s3_uri(uri)
        if bucket == "theirs":
            raise s3_tenancy.ForeignLocation(f"Could not {action} {uri}: AccessDenied")
        return s3_tenancy.S3Location(bucket, key)

    def get_bytes(bucket, key):
        if f"s3://{bucket}/{key}" not in objects:
            raise StorageError(f"Could not read s3://{bucket}/{key}: NoSuchKey")
        return objects[f"s3://{bucket}/{key}"]

    monkeypatch.setattr(s3_tenancy, "location", location)
    monkeypatch.setattr(s3_tenancy, "may_use", lambda account_id, bucket: bucket != "theirs")
    monkeypatch.setattr(async_worker, "get_bytes", get_bytes)
    monkeypatch.setattr(async_worker, "put_bytes", lambda b, k, data: objects.update({f"s3://{b}/{k}": data}))
    monkeypatch.setattr(async_worker, "list_keys", lambda b, prefix: [
        uri.split("/", 3)[3] for uri in objects if uri.startswith(f"s3://{b}/{prefix}")
    ])
    monkeypatch.setattr(async_tasks.drain, "delay", lambda endpoint_id: None)
    return objects


def _make_async():
    EndpointDeployment.objects.update(snapshot={"EndpointConfig": {"AsyncInferenceConfig": ASYNC}})


def test_a_request_is_acknowledged_then_its_output_written_once(runtime, store):  # noqa: F811
    _make_async()
    store["s3://in/payload"] = b"1,2,3"

    answer = runtime.invoke_endpoint_async(
        EndpointName="e", InputLocation="s3://in/payload", InferenceId="req-1", ContentType="text/csv"
    )

    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 202
    assert (answer["InferenceId"], answer["OutputLocation"], answer["FailureLocation"]) == (
        "req-1", "s3://out/r/req-1.out", "s3://out/f/req-1-error.out"
    )
    assert AsyncInvocation.objects.get().status == "Pending"  # acknowledged means committed

    async_tasks.drain(AsyncInvocation.objects.get().endpoint_id)

    assert store["s3://out/r/req-1.out"] == b"1,2,3"
    assert AsyncInvocation.objects.get().status == "Completed"
    store["s3://out/r/req-1.out"] = b"first"  # a second run of the same row finds its object
    AsyncInvocation.objects.update(status="Pending")
    async_tasks.drain(AsyncInvocation.objects.get().endpoint_id)
    assert store["s3://out/r/req-1.out"] == b"first"


def test_a_model_error_and_a_missing_input_land_in_the_failure_path(runtime, store):  # noqa: F811
    _make_async()
    store["s3://in/bad"] = b"fail"

    runtime.invoke_endpoint_async(EndpointName="e", InputLocation="s3://in/bad", InferenceId="bad")
    runtime.invoke_endpoint_async(EndpointName="e", InputLocation="s3://in/none", InferenceId="none")
    async_tasks.drain(AsyncInvocation.objects.first().endpoint_id)

    failure = store["s3://out/f/bad-error.out"]
    assert failure == b'Received server error (500) from primary with message "boom".'
    assert b"Could not read the input s3://in/none" in store["s3://out/f/none-error.out"]
    assert set(AsyncInvocation.objects.values_list("status", flat=True)) == {"Failed"}


def test_a_real_time_endpoint_and_another_accounts_input_are_validation_errors(runtime, store):  # noqa: F811
    EndpointDeployment.objects.update(snapshot={"EndpointConfig": {}})
    status, code, response = error_of(lambda: runtime.invoke_endpoint_async(EndpointName="e", InputLocation="s3://in/x"))
    assert (status, code) == (400, "ValidationError")
    assert "is not an asynchronous endpoint" in response["Error"]["Message"]

    _make_async()
    status, code, response = error_of(
        lambda: runtime.invoke_endpoint_async(EndpointName="e", InputLocation="s3://theirs/x")
    )
    assert (status, code) == (400, "ValidationError")
    assert response["Error"]["Message"] == "Could not access the input location s3://theirs/x: AccessDenied."
    assert not AsyncInvocation.objects.exists()


def test_an_unknown_endpoint_is_a_validation_error(runtime, store):  # noqa: F811
    status, code, _ = error_of(lambda: runtime.invoke_endpoint_async(EndpointName="nope", InputLocation="s3://in/x"))
    assert (status, code) == (400, "ValidationError")


def test_members_that_would_rename_the_output_are_refused(runtime, store):  # noqa: F811
    _make_async()
    status, code, response = error_of(lambda: runtime.invoke_endpoint_async(
        EndpointName="e", InputLocation="s3://in/x", S3OutputPathExtension="sub", Filename="a.json"
    ))
    assert (status, code) == (400, "ValidationError")
    message = response["Error"]["Message"]
    assert message.startswith("S3OutputPathExtension and Filename not supported by Sageport")
    assert not AsyncInvocation.objects.exists()


def test_the_api_port_queues_the_request_too(make_client, access_key, store):  # noqa: F811
    """Containers reach only the API's port: InvokeEndpointAsync answers there as on the data plane."""
    owner = endpoint("InService")
    container(deployment(owner, "Active", {"A": 1.0}), "A", "blue-a")
    account = access_key.account_id
    arn = owner.endpoint_arn.replace("123456789012", account)
    Endpoint.objects.update(account_id=account, endpoint_arn=arn)
    _make_async()
    client, _ = make_client("sagemaker-runtime", region="us-east-1")

    answer = client.invoke_endpoint_async(EndpointName="e", InputLocation="s3://in/x", InferenceId="api")

    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 202
    assert answer["OutputLocation"] == "s3://out/r/api.out"
    assert AsyncInvocation.objects.get().inference_id == "api"


def test_a_container_that_refuses_the_connection_sends_the_request_back(runtime, store):  # noqa: F811
    _make_async()
    store["s3://in/payload"] = b"1"
    runtime.invoke_endpoint_async(EndpointName="e", InputLocation="s3://in/payload", InferenceId="back")
    ServingContainer.objects.update(host_port=free_port())  # nothing listens there

    async_tasks.drain(AsyncInvocation.objects.get().endpoint_id)  # returns: no busy loop

    row = AsyncInvocation.objects.get()
    assert (row.status, row.container_name, row.attempts) == ("Pending", "", 1)
    assert not [uri for uri in store if uri.startswith("s3://out/")]
