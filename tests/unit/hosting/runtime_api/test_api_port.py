"""The API's port answers the runtime API with the data plane's own application (api_port.py): a
boto3 client of the API (as containers reach it) gets the container's answer as a client of the
data plane does, and what the application does off its loop (the database) runs in the request's
own thread, on Django's connection for it."""

import threading

import pytest

from accounts.accesskeys import create_access_key
from capacity.models import Node
from hosting.models import ServingContainer
from hosting.runtime_api import invocation_metrics, routing
from hosting.runtime_api.invocation_metrics import InvocationMetrics
from hosting.runtime_api.router import Router
from tests.unit.hosting.runtime_api.api_port_app import serve_with
from tests.unit.hosting.runtime_api.test_dataplane import model_port  # noqa: F401  (a fixture)
from tests.unit.hosting.runtime_api.test_routing import container, deployment, endpoint
from tests.unit.protocol.conftest import access_key, make_client  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db
ACCOUNT, REGION = "123456789012", "us-east-1"  # test_routing's endpoint `e`


@pytest.fixture
def table_loads(monkeypatch) -> list[str]:
    """The threads the routing table is loaded in (its refresh thread is not started, nor the
    CloudWatch metrics' flush thread)."""
    monkeypatch.setattr(Router, "_refresh_forever", lambda self: None)
    monkeypatch.setattr(invocation_metrics, "_metrics", InvocationMetrics(60, background=False))
    loads, load = [], routing.load_table

    def noted():
        loads.append(threading.current_thread().name)
        return load()

    monkeypatch.setattr(routing, "load_table", noted)
    with serve_with(monkeypatch, Router()):
        yield loads


def test_the_api_port_answers_with_the_container_s_answer_routed_in_the_request_s_thread(
    model_port, table_loads, make_client  # noqa: F811
):
    """model_port's server echoes the body, its content type and the custom attributes."""
    container(deployment(endpoint("InService"), "Active", {"A": 1.0}), "A", "blue-a")
    Node.objects.update(address="127.0.0.1")
    ServingContainer.objects.update(host_port=model_port)
    key = create_access_key(ACCOUNT)
    runtime, transport = make_client(
        "sagemaker-runtime", key_id=key.access_key_id, secret=key.secret_access_key, region=REGION
    )

    answer = runtime.invoke_endpoint(EndpointName="e", Body=b"1,2,3", ContentType="text/csv",
                                     CustomAttributes="trace=7")

    assert transport.responses[-1].content == b"1,2,3"
    assert (answer["ContentType"], answer["CustomAttributes"]) == ("text/csv", "trace=7")
    assert answer["InvokedProductionVariant"] == "A"
    # The table was read from the database (rows of this test's transaction) in the test's thread.
    assert table_loads and set(table_loads) == {threading.current_thread().name}

