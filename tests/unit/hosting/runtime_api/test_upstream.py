"""The data plane's connections to containers: a kept-alive connection that the container closed as
a request was sent on it costs that request nothing (it goes again on a new connection), while a
request that a new connection loses is never sent twice."""

import asyncio
import socketserver
import threading

import pytest

from devstack.stack import free_port
from hosting.runtime_api.upstream import NoAnswer, Refused, Upstream


class ModelServer(socketserver.ThreadingTCPServer):
    """Answers `answered_per_connection` requests on each connection, then closes it as the next
    request arrives without answering it, as a server whose idle timeout closes a kept-alive
    connection just when the client sends on it. Counts the requests it received."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, answered_per_connection: int):
        self.answered_per_connection = answered_per_connection
        self.received = 0
        self.connections = 0
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(socketserver.StreamRequestHandler):
    server: ModelServer

    def handle(self) -> None:
        self.server.connections += 1
        answered = 0
        while _read_request(self.rfile):
            self.server.received += 1
            if answered == self.server.answered_per_connection:
                return  # closed without a byte of answer
            answered += 1
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
            self.wfile.flush()


def _read_request(rfile) -> bool:
    length = 0
    line = rfile.readline()
    if not line:
        return False
    while line not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
        line = rfile.readline()
    rfile.read(length)
    return True


@pytest.fixture
def model_server(request):
    server = ModelServer(request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def post_twice(port: int) -> list[object]:
    """Two requests in a row through one Upstream (the second finds the first's connection kept alive)."""

    async def run() -> list[object]:
        upstream = Upstream(timeout_seconds=5)
        await upstream.open()
        outcomes = []
        try:
            for _ in range(2):
                try:
                    answer = await upstream.post("127.0.0.1", port, b"1,2,3", {"Content-Type": "text/csv"})
                    outcomes.append((answer.status, answer.body))
                except NoAnswer as error:
                    outcomes.append(error)
        finally:
            await upstream.close()
        return outcomes

    return asyncio.run(run())


@pytest.mark.parametrize("model_server", [1], indirect=True)
def test_a_request_on_a_kept_alive_connection_the_container_closed_is_sent_again_on_a_new_one(model_server):
    outcomes = post_twice(model_server.server_address[1])

    assert outcomes == [(200, b"ok"), (200, b"ok")]
    # The second request reached the closing connection, then a new one, which answered it.
    assert (model_server.received, model_server.connections) == (3, 2)


@pytest.mark.parametrize("model_server", [0], indirect=True)
def test_a_request_a_new_connection_loses_is_not_sent_twice(model_server):
    outcomes = post_twice(model_server.server_address[1])

    assert all(isinstance(outcome, NoAnswer) for outcome in outcomes)
    assert model_server.received == 2  # once each: the container may have acted on it


def test_a_container_that_refuses_connections_is_told_apart_from_one_that_does_not_answer():
    async def run() -> None:
        upstream = Upstream(timeout_seconds=5)
        await upstream.open()
        try:
            await upstream.post("127.0.0.1", free_port(), b"", {})
        finally:
            await upstream.close()

    with pytest.raises(Refused):
        asyncio.run(run())
