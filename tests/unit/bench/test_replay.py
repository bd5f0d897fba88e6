"""bench/replay.py: one request signed once and replayed over keep-alive connections, against a
local HTTP/1.1 server: the bytes carry a signature Sageport's verifier accepts, each connection is
reused, answers the check refuses are failures, and the count bound holds."""
import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.credentials import Credentials

from bench import replay
from protocol import sigv4

KEY, SECRET = "AKIAREPLAYTEST000001", "replay/secret+key"


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless the answer says otherwise

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        server = self.server
        with server.lock:
            server.received.append((self.requestline, dict(self.headers), body))
            server.connections.add(self.client_address)
            number = len(server.received)
        answer, status = b'{"ok":"bench-job"}', 200
        if number % 5 == 0:
            answer, status = b'{"__type":"ThrottlingException"}', 400
        self.send_response(status)
        if number % 7 == 0:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(answer), answer))
            return
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    httpd.lock, httpd.received, httpd.connections = threading.Lock(), [], set()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_the_replayed_request_is_one_signed_request_sent_again_on_kept_connections(server):
    body = json.dumps({"TrainingJobName": "bench-job"}).encode()
    request = replay.signed_request(
        _url(server) + "/", body,
        {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker.DescribeTrainingJob"},
        Credentials(KEY, SECRET), "sagemaker", "eu-west-1",
    )

    def check(status: int, answer: bytes) -> bool:
        return status == 200 and b"bench-job" in answer

    result = replay.replay(_url(server), request, check, requests=70, concurrency=3, max_seconds=30)

    assert len(server.received) == 70
    assert result["failures"] == 70 // 5  # every fifth answer is a 400
    assert result["requests"] == 70 - 70 // 5  # chunked answers were read too
    assert len(server.connections) <= 3 + 70 // 5  # reopened only after a refused answer
    assert {received[2] for received in server.received} == {body}
    requestline, headers, _ = server.received[-1]
    assert requestline == "POST / HTTP/1.1"
    signed = sigv4.SignedRequest("POST", "/", {name.lower(): value for name, value in headers.items()}, body)
    context = sigv4.verify(
        signed, signing_name="sagemaker", now=datetime.now(UTC), max_skew=timedelta(minutes=5),
        resolve=lambda key: (SECRET, "123456789012") if key == KEY else None,
    )
    assert (context.access_key_id, context.region) == (KEY, "eu-west-1")


def test_a_server_that_is_not_there_counts_failures_within_the_bounds():
    result = replay.replay("http://127.0.0.1:9", b"POST / HTTP/1.1\r\n\r\n", lambda status, answer: True,
                           requests=20, concurrency=2, max_seconds=10)
    assert result["failures"] == 20
    assert result["requests"] == 0
