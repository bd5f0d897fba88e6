"""The API's port answers the runtime API with the data plane's own application (api_port.py): a
boto3 client of the API (as containers reach it) gets the container's answer as a client of the
data plane does, and what the application does off its loop (the database) runs in the request's
own thread, on Django's connection for it."""

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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



class _AnswersOk(BaseHTTPRequestHandler):
    """Answers `ok` to each request, keeping connections alive; counts them."""

    protocol_version = "HTTP/1.1"
    connections = 0

    def setup(self) -> None:
        super().setup()
        type(self).connections += 1

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args) -> None:
        pass


class _TimesOutIdleConnections(_AnswersOk):
    """Once a connection idled a moment after an answer, says so as some servers do: an unasked
    `408 Request Timeout`, and closes it. `idle_answered` is set then."""

    connections = 0
    idle_answered = threading.Event()

    def handle(self) -> None:
        self.handle_one_request()
        self.connection.settimeout(0.1)
        try:
            if self.connection.recv(1, socket.MSG_PEEK):
                return  # another request came first: not the case this server is for
        except TimeoutError:
            self.wfile.write(b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n"
                             b"Content-Length: 0\r\n\r\n")
            self.wfile.flush()
            type(self).idle_answered.set()


def test_a_kept_connection_the_container_spoke_on_while_idle_never_carries_the_next_request(
    table_loads, make_client  # noqa: F811
):
    """The API thread's loop runs only during its requests: what a kept connection received
    between them is read before the next request is sent, not taken for its answer."""
    with _endpoint_served_by(_TimesOutIdleConnections, make_client) as (runtime, transport):
        runtime.invoke_endpoint(EndpointName="e", Body=b"1")
        assert _TimesOutIdleConnections.idle_answered.wait(10)
        runtime.invoke_endpoint(EndpointName="e", Body=b"2")

    assert transport.responses[-1].content == b"ok"
    assert _TimesOutIdleConnections.connections == 2  # the second on a new connection


@pytest.mark.django_db(transaction=True)  # the rows seen from the requests' own threads
def test_a_request_thread_that_ends_leaves_its_loop_and_connections_to_the_next_request(
    table_loads, make_client  # noqa: F811
):
    # granian ends a request thread that stays idle; the loop it used (and the connections kept
    # on it) must not end with it: the next request, in another thread, goes on with them.
    with _endpoint_served_by(_AnswersOk, make_client) as (runtime, transport):
        for _ in range(2):
            request = {"EndpointName": "e", "Body": b"1"}
            thread = threading.Thread(target=runtime.invoke_endpoint, kwargs=request)
            thread.start()
            thread.join(timeout=30)
            assert not thread.is_alive()

    assert [answer.content for answer in transport.responses] == [b"ok", b"ok"]
    assert _AnswersOk.connections == 1


@contextlib.contextmanager
def _endpoint_served_by(handler: type[BaseHTTPRequestHandler], make_client):  # noqa: F811
    """Endpoint `e`'s one container answered by a server with `handler`; a runtime client of the
    API port and its transport."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    container(deployment(endpoint("InService"), "Active", {"A": 1.0}), "A", "blue-a")
    Node.objects.update(address="127.0.0.1")
    ServingContainer.objects.update(host_port=server.server_address[1])
    key = create_access_key(ACCOUNT)
    try:
        yield make_client("sagemaker-runtime", key_id=key.access_key_id, secret=key.secret_access_key,
                          region=REGION)
    finally:
        server.shutdown()
        server.server_close()
