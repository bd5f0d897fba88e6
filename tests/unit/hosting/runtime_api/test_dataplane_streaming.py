"""InvokeEndpointWithResponseStream on the data plane, as boto3 reads it: the container's chunked
answer relayed piece by piece as PayloadPart events, its first piece before the rest exists, a
container dying mid-stream as ModelStreamError, the data plane's own failure or shutdown
mid-stream as InternalStreamFailure, back pressure, and the container counted in
flight (what a blue/green drain waits for) until the stream ends."""

import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.exceptions import EventStreamError

from hosting.runtime_api import streaming
from hosting.runtime_api.router import Router
from hosting.runtime_api.upstream import Exchange
from tests.unit.hosting.runtime_api.test_dataplane import (  # noqa: F401
    data_plane,
    data_plane_server,
    error_of,
    runtime,
)

pytestmark = pytest.mark.django_db(transaction=True)

TOKENS = [f"token{i} ".encode() for i in range(5)]
BIG_PIECE = b"x" * 65536
BIG_PIECES = 1024  # 64 MB: far more than the sockets' and the data plane's buffers hold


class _StreamingModel(BaseHTTPRequestHandler):
    """Answers chunked, one token per chunk. Body `wait`: the first token, then the rest once the
    server's `go_on` is set; `die`: two tokens then the connection reset; `fail`: a 500; `big`:
    64 MB in 64 KB chunks, counting in `written` what the socket took."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        command = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.accepts.append(self.headers.get("Accept"))
        if command == b"fail":
            self._whole(500, b"boom")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if command == b"big":
            for _ in range(BIG_PIECES):
                self._chunk(BIG_PIECE)
                self.server.written += len(BIG_PIECE)
            self.server.finished.set()
        else:
            self._tokens(command)
        self.wfile.write(b"0\r\n\r\n")

    def _tokens(self, command: bytes) -> None:
        for index, token in enumerate(TOKENS):
            if index == 1 and command == b"wait":
                assert self.server.go_on.wait(timeout=20), "the test never let the model go on"
            if index == 2 and command == b"die":
                self.wfile.flush()
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()  # a reset, mid-stream, as a killed process's kernel sends
                raise ConnectionAbortedError()
            self._chunk(token)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _whole(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionAbortedError:
            pass

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def model():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StreamingModel)
    server.daemon_threads = True
    server.go_on, server.finished = threading.Event(), threading.Event()
    server.written, server.accepts = 0, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.go_on.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def model_port(model):
    return model.server_address[1]


def _stream(runtime, body: bytes, **kwargs):  # noqa: F811
    return runtime.invoke_endpoint_with_response_stream(EndpointName="e", Body=body, **kwargs)


def test_tokens_arrive_in_order_as_payload_parts_with_the_answers_headers(runtime, model):  # noqa: F811
    answer = _stream(runtime, b"go", Accept="text/plain", CustomAttributes="trace=7")

    parts = [event["PayloadPart"]["Bytes"] for event in answer["Body"]]
    assert b"".join(parts) == b"".join(TOKENS)
    assert answer["ContentType"] == "text/plain"
    assert answer["InvokedProductionVariant"] == "A"
    assert answer["ResponseMetadata"]["HTTPHeaders"]["content-type"] == "application/vnd.amazon.eventstream"
    assert model.accepts == ["text/plain"]  # X-Amzn-SageMaker-Accept reaches the container as Accept


def test_the_first_token_arrives_before_the_container_wrote_the_rest(runtime, model):  # noqa: F811
    """The model writes its second token only once this test has read the first one."""
    events = iter(_stream(runtime, b"wait")["Body"])

    assert next(events)["PayloadPart"]["Bytes"] == TOKENS[0]
    model.go_on.set()
    assert b"".join(event["PayloadPart"]["Bytes"] for event in events) == b"".join(TOKENS[1:])


def test_a_container_dying_mid_stream_ends_it_with_a_model_stream_error(runtime):  # noqa: F811
    events = iter(_stream(runtime, b"die")["Body"])
    received = []
    with pytest.raises(EventStreamError) as raised:
        for event in events:
            received.append(event["PayloadPart"]["Bytes"])

    assert b"".join(received) == b"".join(TOKENS[:2])
    assert raised.value.response["Error"]["Code"] == "ModelStreamError"
    assert "closed the stream" in raised.value.response["Error"]["Message"]


def test_a_stream_past_the_invocation_timeout_ends_with_model_invocation_time_exceeded(runtime):  # noqa: F811
    """The model is never let go on: the data plane's whole-exchange timeout (5 s here) ends it."""
    events = iter(_stream(runtime, b"wait")["Body"])
    assert next(events)["PayloadPart"]["Bytes"] == TOKENS[0]

    with pytest.raises(EventStreamError) as raised:
        list(events)
    assert raised.value.response["Error"] == {
        "Code": "ModelStreamError",
        "Message": "Your model primary did not complete sending the inference response in the allotted time.",
    }


def test_a_stream_open_when_the_data_plane_stops_ends_with_internal_stream_failure(
    runtime, data_plane_server, model  # noqa: F811
):
    """The model never goes on; the data plane is told to stop and its graceful shutdown (shortened
    here) runs out with the stream open."""
    events = iter(_stream(runtime, b"wait")["Body"])
    assert next(events)["PayloadPart"]["Bytes"] == TOKENS[0]

    data_plane_server.config.timeout_graceful_shutdown = 0.2
    data_plane_server.should_exit = True
    with pytest.raises(EventStreamError) as raised:
        list(events)
    failure = {"Code": "InternalStreamFailure", "Message": streaming.INTERNAL_FAILURE}
    assert raised.value.response["Error"] == failure


def test_an_unexpected_error_in_the_relay_ends_the_stream_with_internal_stream_failure(
    runtime, model, monkeypatch  # noqa: F811
):
    taken = Exchange.take

    async def failing_after_one(answer, limit):
        if getattr(answer, "took_one", False):
            raise RuntimeError("a bug in the relay")
        answer.took_one = True
        return await taken(answer, limit)

    monkeypatch.setattr(Exchange, "take", failing_after_one)
    received = []
    with pytest.raises(EventStreamError) as raised:
        for event in _stream(runtime, b"go")["Body"]:
            received.append(event["PayloadPart"]["Bytes"])

    assert received and b"".join(TOKENS).startswith(b"".join(received))
    assert raised.value.response["Error"]["Code"] == "InternalStreamFailure"


def test_errors_before_the_stream_are_invoke_endpoints(runtime):  # noqa: F811
    status, code, response = error_of(lambda: _stream(runtime, b"fail"))
    assert (status, code, response["OriginalStatusCode"], response["OriginalMessage"]) == (
        424, "ModelError", 500, "boom"
    )
    status, code, response = error_of(
        lambda: runtime.invoke_endpoint_with_response_stream(EndpointName="nothing", Body=b"1")
    )
    assert (status, code) == (400, "ValidationError")
    assert response["Error"]["Message"] == "Endpoint nothing of account 123456789012 not found."
    assert error_of(lambda: _stream(runtime, b"1", TargetVariant="B"))[:2] == (400, "ValidationError")
    assert error_of(lambda: _stream(runtime, b"x" * (6 * 2**20 + 1)))[:2] == (400, "ValidationError")


def test_a_slow_reader_holds_the_container_back(runtime, model):  # noqa: F811
    """A client that reads nothing: the container can write only what the sockets' buffers take,
    not its whole 64 MB answer; once the client reads, all of it arrives."""
    answer = _stream(runtime, b"big")  # its body is read only below

    assert not model.finished.wait(timeout=3)
    assert model.written < BIG_PIECES * len(BIG_PIECE) // 2
    total = sum(len(event["PayloadPart"]["Bytes"]) for event in answer["Body"])
    assert total == BIG_PIECES * len(BIG_PIECE)
    assert model.finished.is_set()


def test_the_container_counts_in_flight_until_the_stream_ends(runtime, model, monkeypatch):  # noqa: F811
    """What a blue/green drain waits for (router.py publishes these counts in its ack)."""
    in_flight = []
    choose, release = Router.choose, Router.release

    def counted_choose(self, *args, **kwargs):
        in_flight.append(1)
        return choose(self, *args, **kwargs)

    def counted_release(self, choice):
        in_flight.pop()
        return release(self, choice)

    monkeypatch.setattr(Router, "choose", counted_choose)
    monkeypatch.setattr(Router, "release", counted_release)
    events = iter(_stream(runtime, b"wait")["Body"])
    next(events)

    assert in_flight == [1]  # the head and a token went out; the stream is still open
    model.go_on.set()
    list(events)
    deadline = time.monotonic() + 10
    while in_flight and time.monotonic() < deadline:  # the data plane ends its side just after
        time.sleep(0.01)
    assert in_flight == []
