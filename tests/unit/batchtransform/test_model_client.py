"""Requests to a transform container (API reference, ModelClientConfig): a timeout, a lost
connection or a 5xx is sent again up to InvocationsMaxRetries times; a 4xx is the model's verdict,
never retried; an answer flooding past the bound fails at once. GET /execution-parameters is
optional: a container without it answers nothing usable. Answers come with Content-Length or
`Transfer-Encoding: chunked` (both HTTP/1.1 framings a serving container may use); a large one
waits on disk, not in memory."""

import threading
import time
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
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Scripted.posts += 1
        if body in HOSTILE:
            return HOSTILE[body](self)
        status = Scripted.script.pop(0) if Scripted.script else 200
        self._answer(status, b"x" * 64 if status == 200 else b"no")

    def chunked(self, chunks):
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def trickle(self):
        """Headers at once, then a byte every 0.2 s: each read is quick, the whole is not."""
        self.send_response(200)
        self.send_header("Content-Length", "100")
        self.end_headers()
        for _ in range(100):
            self.wfile.write(b"t")
            self.wfile.flush()
            time.sleep(0.2)

    def do_GET(self):
        self._answer(404, b"not here")

    def _answer(self, status: int, body: bytes):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


HOSTILE = {
    b"chunked": lambda handler: handler.chunked([b"one ", b"two ", b"three"]),
    b"large": lambda handler: handler.chunked([b"y" * 1000] * 300),
    b"flood": lambda handler: handler.chunked(b"z" * 65536 for _ in iter(int, 1)),
    b"trickle": Scripted.trickle,
}


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


def test_a_chunked_answer_is_read_whole_and_the_connection_reused(server):
    client = ModelClient(server, None, None, timeout=5, retries=0)
    assert client.invoke(b"chunked") == b"one two three"
    assert client.invoke(b"r") == b"x" * 64  # the same kept-alive connection carries the next one
    assert Scripted.posts == 2


def test_an_answer_larger_than_the_memory_bound_waits_in_a_file(server):
    answer = ModelClient(server, None, None, timeout=5, retries=0, memory_bytes=100_000).invoke(b"large")
    assert not isinstance(answer, bytes)
    with answer:
        assert answer.read() == b"y" * 300_000


def test_an_endless_answer_is_refused_at_the_bound(server, monkeypatch):
    """A container that floods a chunked answer: the read stops at MAX_ANSWER_BYTES."""
    monkeypatch.setattr(model_client, "MAX_ANSWER_BYTES", 1 << 20)
    with pytest.raises(ModelError, match="over 1048576 bytes"):
        ModelClient(server, None, None, timeout=5, retries=3, memory_bytes=1024).invoke(b"flood")
    assert Scripted.posts == 1


def test_a_trickling_answer_times_out_with_sagemakers_words(server):
    """InvocationsTimeoutInSeconds bounds the whole request, in the data log's words
    ("Model server did not respond to /invocations request within", which grand-challenge.org's
    SageMaker backend looks for), and the request is sent again InvocationsMaxRetries times."""
    started = time.monotonic()
    with pytest.raises(ModelError) as failed:
        ModelClient(server, None, None, timeout=1, retries=1).invoke(b"trickle")
    assert failed.value.message == "Model server did not respond to /invocations request within 1 seconds"
    assert failed.value.status is None and Scripted.posts == 2
    assert time.monotonic() - started < 6
