"""`GET /ping` as the platform sends it (hosting/health.py), against a server on this machine."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hosting import health


class _Recorder(BaseHTTPRequestHandler):
    user_agents: list[str | None] = []

    def do_GET(self) -> None:
        self.user_agents.append(self.headers.get("User-Agent"))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server_port(settings):
    settings.SAGEPORT_NODE_ADDRESS = "127.0.0.1"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_health_check_sends_sagemakers_user_agent(server_port, monkeypatch):
    """SageMaker's health checks arrive with `AHC/2.0` (serving containers' access logs:
    `"GET /ping HTTP/1.1" 200 1 "-" "AHC/2.0"`, aws/sagemaker-python-sdk#1554)."""
    monkeypatch.setattr(_Recorder, "user_agents", [])

    assert health.ping(server_port) == health.PingResult(True)
    assert _Recorder.user_agents == ["AHC/2.0"]
