"""The data plane as clients see it: boto3's sagemaker-runtime client against the ASGI app under
uvicorn, routed from the database to a model server on this machine."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
import urllib3
import uvicorn
from botocore.config import Config
from botocore.exceptions import ClientError

from accounts.accesskeys import create_access_key
from capacity.models import Node
from devstack.stack import free_port
from hosting.models import ServingContainer
from hosting.runtime_api import contract, invocation_metrics
from hosting.runtime_api.dataplane import DataPlane
from hosting.runtime_api.invocation_metrics import InvocationMetrics
from hosting.runtime_api.router import Router
from hosting.runtime_api.upstream import Upstream
from tests.unit.hosting.runtime_api.test_routing import container, deployment, endpoint
from tests.unit.hosting.runtime_api.unserved import unserved_calls

# Its rows are read by the server's threads, on connections of their own: they must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


class _Model(BaseHTTPRequestHandler):
    """Echoes the body and the custom attributes; a body `fail` gets a 500. Keeps the User-Agent
    of every request."""

    protocol_version = "HTTP/1.1"
    user_agents: list[str | None] = []

    def do_POST(self) -> None:
        self.user_agents.append(self.headers.get("User-Agent"))
        body = self.rfile.read(int(self.headers["Content-Length"]))
        status = 500 if body == b"fail" else 200
        answer = b"boom" if status == 500 else body
        self.send_response(status)
        self.send_header("Content-Type", self.headers.get("Content-Type", "application/octet-stream"))
        self.send_header(
            "X-Amzn-SageMaker-Custom-Attributes", self.headers.get("X-Amzn-SageMaker-Custom-Attributes", "")
        )
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def model_port():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def data_plane(data_plane_server) -> str:
    return data_plane_server.url


@pytest.fixture
def data_plane_server(monkeypatch):
    """The app under uvicorn on a free port (its address in `url`); its router's refresh thread is
    not started (no Redis), nor the CloudWatch metrics' flush thread (it would outlive the test's
    database)."""
    monkeypatch.setattr(Router, "_refresh_forever", lambda self: None)
    monkeypatch.setattr(invocation_metrics, "_metrics", InvocationMetrics(60, background=False))
    port = free_port()
    config = uvicorn.Config(
        DataPlane(Router(), Upstream(timeout_seconds=5)),
        host="127.0.0.1",
        port=port,
        lifespan="on",
        log_level="warning",
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the data plane did not start"
        time.sleep(0.02)
    server.url = f"http://127.0.0.1:{port}"
    yield server
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def runtime(data_plane, model_port):
    """A client of the data plane, and an endpoint `e` whose one container is the model server."""
    container(deployment(endpoint("InService"), "Active", {"A": 1.0}), "A", "blue-a")
    Node.objects.update(address="127.0.0.1")
    ServingContainer.objects.update(host_port=model_port)
    key = create_access_key("123456789012")
    return boto3.client(
        "sagemaker-runtime",
        endpoint_url=data_plane,
        region_name="us-east-1",
        aws_access_key_id=key.access_key_id,
        aws_secret_access_key=key.secret_access_key,
        config=Config(retries={"max_attempts": 1}),
    )


def error_of(call) -> tuple[int, str, dict]:
    with pytest.raises(ClientError) as caught:
        call()
    response = caught.value.response
    return response["ResponseMetadata"]["HTTPStatusCode"], response["Error"]["Code"], response


def test_an_invocation_reaches_the_container_and_returns_its_answer(runtime):
    answer = runtime.invoke_endpoint(
        EndpointName="e", Body=b"1,2,3", ContentType="text/csv", CustomAttributes="trace=7"
    )

    assert answer["Body"].read() == b"1,2,3"
    assert answer["ContentType"] == "text/csv"
    assert answer["CustomAttributes"] == "trace=7"
    assert answer["InvokedProductionVariant"] == "A"


def test_the_container_gets_the_platforms_user_agent_not_the_clients(runtime, monkeypatch):
    """SageMaker's hosting sends its own User-Agent (`AHC/2.0` in serving containers' access
    logs, aws/sagemaker-python-sdk#1554), never the caller's botocore one."""
    monkeypatch.setattr(_Model, "user_agents", [])

    runtime.invoke_endpoint(EndpointName="e", Body=b"1")

    assert _Model.user_agents == ["AHC/2.0"]


def test_a_container_error_is_a_model_error_with_its_message(runtime):
    status, code, response = error_of(lambda: runtime.invoke_endpoint(EndpointName="e", Body=b"fail"))

    assert (status, code) == (424, "ModelError")
    assert response["OriginalStatusCode"] == 500
    assert response["OriginalMessage"] == "boom"


def test_unknown_endpoints_and_variants_are_validation_errors(runtime):
    assert error_of(lambda: runtime.invoke_endpoint(EndpointName="nothing", Body=b"1"))[:2] == (
        400,
        "ValidationError",
    )
    assert error_of(lambda: runtime.invoke_endpoint(EndpointName="e", Body=b"1", TargetVariant="B"))[:2] == (
        400,
        "ValidationError",
    )


def test_a_body_over_6_mb_is_refused(runtime):
    status, code, response = error_of(
        lambda: runtime.invoke_endpoint(EndpointName="e", Body=b"x" * (6 * 2**20 + 1))
    )

    assert (status, code) == (400, "ValidationError")
    assert "less than or equal to 6291456" in response["Error"]["Message"]


def test_unsigned_requests_wrong_methods_and_unknown_paths_get_rest_json_errors(data_plane, runtime):
    http = urllib3.PoolManager()
    answers = {
        "unsigned": http.request("POST", f"{data_plane}/endpoints/e/invocations", body=b"1"),
        "get": http.request("GET", f"{data_plane}/endpoints/e/invocations"),
        "unknown path": http.request("POST", f"{data_plane}/somewhere"),
    }

    seen = {
        name: (r.status, r.headers["X-Amzn-ErrorType"], json.loads(r.data)["__type"])
        for name, r in answers.items()
    }
    assert seen == {
        "unsigned": (403, "MissingAuthenticationTokenException", "MissingAuthenticationTokenException"),
        "get": (400, "UnknownOperationException", "UnknownOperationException"),
        "unknown path": (400, "UnknownOperationException", "UnknownOperationException"),
    }
    assert {r.headers["Content-Type"] for r in answers.values()} == {"application/json"}


def test_every_runtime_operation_of_the_model_is_served_on_the_data_plane(runtime):
    """InvokeEndpoint, InvokeEndpointAsync and InvokeEndpointWithResponseStream (the only one the
    API port leaves to the data plane): the model lists no other."""
    assert {operation for _, operation in contract.unserved_paths()} == set(contract.DATA_PLANE_ONLY)
    assert set(unserved_calls(runtime)) == set(contract.DATA_PLANE_ONLY)


def test_a_runtime_operation_a_newer_model_adds_answers_501_like_the_api(monkeypatch):
    """The API answers an unserved SageMaker operation 501 NotImplementedException
    (protocol/dispatch.py); a runtime operation the botocore model gains alike."""
    future = ((r"^(?:.*/)?endpoints/[^/]+/future-invocations$", "InvokeEndpointInTheFuture"),)
    monkeypatch.setattr(contract, "unserved_paths", lambda: future)

    error = contract.unserved("endpoints/e/future-invocations")

    assert (error.status, error.code) == (501, "NotImplementedException")
    assert error.message == "Sageport does not implement SageMakerRuntime.InvokeEndpointInTheFuture"


def test_an_unsigned_request_is_refused_before_anything_else(data_plane):
    for path in ("invocations", "invocations-response-stream", "async-invocations"):
        answer = urllib3.PoolManager().request("POST", f"{data_plane}/endpoints/e/{path}")
        refusal = (answer.status, answer.headers["X-Amzn-ErrorType"])
        assert refusal == (403, "MissingAuthenticationTokenException"), path


def test_a_scope_naming_a_region_aws_does_not_have_is_refused(data_plane, runtime):
    """As on the API: 403 "Credential should be scoped to a valid region, not 'xx-fake-9'."."""
    credentials = runtime._request_signer._credentials
    client = boto3.client(
        "sagemaker-runtime",
        endpoint_url=data_plane,
        region_name="xx-fake-9",
        aws_access_key_id=credentials.access_key,
        aws_secret_access_key=credentials.secret_key,
        config=Config(retries={"max_attempts": 1}),
    )
    status, code, response = error_of(lambda: client.invoke_endpoint(EndpointName="e", Body=b"1"))
    assert (status, code) == (403, "InvalidSignatureException")
    assert response["Error"]["Message"] == "Credential should be scoped to a valid region, not 'xx-fake-9'."
