"""InvokeEndpoint on the API's port (api_port.py, the port containers and single-URL clients use)
when a container's host is lost: a request sent on a kept-alive connection to it is never
acknowledged, yet it is answered by a live container of the endpoint within about a second,
as on the data plane (hosting/runtime_api/exchange.py), not after the invocation timeout.

SageMaker keeps an endpoint answering while an instance fails its health checks and is replaced
(Developer Guide, your-algorithms-inference-code.html, "How Your Container Should Respond to
Health Check (Ping) Requests"). A lost host is made here by dropping every packet to one model
server's port, both servers in a network namespace of the test's own (root, `ip`, `iptables`)."""

import os
import shutil
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from accounts.accesskeys import create_access_key
from capacity.models import Node
from hosting.models import ServingContainer
from hosting.runtime_api import invocation_metrics
from hosting.runtime_api.invocation_metrics import InvocationMetrics
from hosting.runtime_api.router import Router
from tests.e2e.netns_forwarder import inside
from tests.unit.hosting.runtime_api.api_port_app import serve_with
from tests.unit.hosting.runtime_api.test_routing import container, deployment, endpoint
from tests.unit.protocol.conftest import access_key, make_client  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db
ACCOUNT, REGION = "123456789012", "us-east-1"  # test_routing's endpoint `e`
MAX_SECONDS = 3.0  # below the tests' invocation timeout, 4 s (tests/settings.py)


class _Model(BaseHTTPRequestHandler):
    """Answers its container's name, keeping connections alive."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        name = self.server.container_name.encode()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(name), name))

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def namespace():
    if os.geteuid() != 0 or not all(shutil.which(tool) for tool in ("ip", "iptables")):
        pytest.skip("a host lost inside a network namespace needs root, ip and iptables")
    name = f"sgt{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True, timeout=30)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True, timeout=30)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=True, timeout=30)


@pytest.fixture
def models(namespace):
    """A model server per container name, listening inside the namespace: name → port."""
    servers = []
    with inside(f"/run/netns/{namespace}"):
        for name in ("lost", "live"):
            server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
            server.daemon_threads, server.container_name = True, name
            threading.Thread(target=server.serve_forever, daemon=True).start()
            servers.append(server)
    yield {server.container_name: server.server_address[1] for server in servers}
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def chosen(monkeypatch):
    """The containers the API's router picks, in turn (its refresh thread and the CloudWatch
    metrics' flush thread are not started)."""
    monkeypatch.setattr(Router, "_refresh_forever", lambda self: None)
    monkeypatch.setattr(invocation_metrics, "_metrics", InvocationMetrics(60, background=False))
    router, picks = Router(), []
    choose = router.choose

    def noted(*args, **kwargs):
        choice = choose(*args, **kwargs)
        picks.append(choice.backend.container_name)
        return choice

    monkeypatch.setattr(router, "choose", noted)
    with serve_with(monkeypatch, router):  # its loop started by the first request: in the namespace
        yield picks


def test_a_request_on_a_connection_to_a_lost_host_is_answered_by_a_live_container(
    namespace, models, chosen, make_client  # noqa: F811
):
    fleet = deployment(endpoint("InService"), "Active", {"A": 1.0})
    for name in models:
        container(fleet, "A", name)
        ServingContainer.objects.filter(name=name).update(host_port=models[name])
    Node.objects.update(address="127.0.0.1")
    key = create_access_key(ACCOUNT)
    runtime, transport = make_client("sagemaker-runtime", key_id=key.access_key_id,
                                     secret=key.secret_access_key, region=REGION)

    def invoke() -> tuple[str, float]:
        started = time.monotonic()
        runtime.invoke_endpoint(EndpointName="e", Body=b"{}", ContentType="application/json")
        return transport.responses[-1].content.decode(), time.monotonic() - started

    with inside(f"/run/netns/{namespace}"):
        for _ in range(60):  # until the lost one has a kept-alive connection (random picks: bounded)
            invoke()
            if "lost" in chosen:
                break
        assert "lost" in chosen
        subprocess.run(["ip", "netns", "exec", namespace, "iptables", "-A", "INPUT", "-p", "tcp",
                        "--dport", str(models["lost"]), "-j", "DROP"], check=True, timeout=30)
        del chosen[:]
        answers = []
        while "lost" not in chosen and len(answers) < 60:  # until a request met the lost host
            answers.append(invoke())

    assert "lost" in chosen
    assert {name for name, _ in answers} == {"live"}  # every one answered, by the live container
    # The one sent on the lost connection waited for its acknowledgement (1 s), not for an answer
    # (the invocation timeout), then for a new connection (250 ms), then went to the live one.
    assert max(seconds for _, seconds in answers) < MAX_SECONDS, answers
