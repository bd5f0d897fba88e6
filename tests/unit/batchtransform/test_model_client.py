"""Requests to a transform container (API reference, ModelClientConfig): a timeout, a lost
connection or a 5xx is sent again up to InvocationsMaxRetries times; a 4xx is the model's verdict,
never retried; an answer flooding past the bound fails at once. GET /execution-parameters is
optional: a container without it answers nothing usable."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from batchtransform import model_client
from batchtransform.model_client import ModelClient, ModelError


class Scripted(BaseHTTPRequestHandler):
    """Answers POSTs with the statuses of `script` in turn (then 200), counting them."""

    protocol_version = "HTTP/1.1"
    script: list[int] = []
    posts = 0

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        Scripted.posts += 1
        status = Scripted.script.pop(0) if Scripted.script else 200
        self._answer(status, b"x" * 64 if status == 200 else b"no")

    def do_GET(self):
        self._answer(404, b"not here")

    def _answer(self, status: int, body: bytes):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Scripted.posts, Scripted.script = 0, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_a_5xx_is_sent_again_and_a_4xx_is_not(server):
    Scripted.script = [503, 500]
    assert ModelClient(server, "text/csv", None, timeout=5, retries=2).invoke(b"r") == b"x" * 64
    assert Scripted.posts == 3

    Scripted.posts, Scripted.script = 0, [400]
    with pytest.raises(ModelError) as rejected:
        ModelClient(server, "text/csv", None, timeout=5, retries=3).invoke(b"r")
    assert (rejected.value.status, rejected.value.message, Scripted.posts) == (400, "no", 1)


def test_retries_run_out(server):
    Scripted.script = [500, 500]
    with pytest.raises(ModelError) as failed:
        ModelClient(server, None, None, timeout=5, retries=1).invoke(b"r")
    assert failed.value.status == 500 and Scripted.posts == 2


def test_a_flooding_answer_fails_without_a_retry(server, monkeypatch):
    monkeypatch.setattr(model_client, "MAX_ANSWER_BYTES", 16)
    with pytest.raises(ModelError, match="over 16 bytes"):
        ModelClient(server, None, None, timeout=5, retries=3).invoke(b"r")
    assert Scripted.posts == 1


def test_no_execution_parameters_served(server):
    assert ModelClient(server, None, None, timeout=5, retries=0).execution_parameters() is None
