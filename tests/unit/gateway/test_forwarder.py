"""The forwarder relays bytes both ways between a listening port and an upstream URL, retries a
port someone else holds, refuses connections over its limit, and closes the client's connection
when the upstream cannot be reached. Everything here listens and connects on 127.0.0.1."""

import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from devstack.stack import free_port
from gateway.forwarder import Forwarder, Route

DEADLINE_SECONDS = 10


class Upper(socketserver.StreamRequestHandler):
    """The upstream: answers each line with the line upper-cased."""

    def handle(self):
        for line in self.rfile:
            self.wfile.write(line.upper())


@pytest.fixture
def upstream() -> Iterator[str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Upper)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def started(routes: list[Route], **options) -> Forwarder:
    forwarder = Forwarder(routes, retry_seconds=0.1, **options)
    forwarder.start()
    wait_for(lambda: len(forwarder.bound) == len(routes))
    return forwarder


def wait_for(condition) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.02)


def exchange(port: int, line: bytes) -> bytes:
    """The answer to `line`; b"" when the connection is closed (or reset) without one."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_SECONDS) as sock:
        try:
            sock.sendall(line)
            return sock.makefile("rb").readline()
        except ConnectionResetError:
            return b""


def test_bytes_go_to_the_upstream_and_its_answer_comes_back(upstream):
    forwarder = started([Route("s3", "127.0.0.1", 0, upstream)])
    try:
        assert exchange(forwarder.bound["s3"], b"get object\n") == b"GET OBJECT\n"
        assert exchange(forwarder.bound["s3"], b"again\n") == b"AGAIN\n"
    finally:
        forwarder.stop()


def test_an_unreachable_upstream_closes_the_connection(upstream):
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    forwarder = started([Route("api", "127.0.0.1", 0, dead)])
    try:
        assert exchange(forwarder.bound["api"], b"hello\n") == b""
    finally:
        forwarder.stop()


def test_a_port_held_by_another_process_is_taken_once_it_is_free(upstream):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    forwarder = Forwarder([Route("api", "127.0.0.1", port, upstream)], retry_seconds=0.1)
    forwarder.start()
    try:
        time.sleep(0.3)
        assert forwarder.bound == {}
        holder.close()
        wait_for(lambda: forwarder.bound == {"api": port})
        assert exchange(port, b"taken over\n") == b"TAKEN OVER\n"
    finally:
        forwarder.stop()
        holder.close()


def test_connections_over_the_limit_are_refused(upstream):
    forwarder = started([Route("s3", "127.0.0.1", 0, upstream)], max_connections=1)
    port = forwarder.bound["s3"]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_SECONDS) as first:
            first.sendall(b"one\n")
            assert first.makefile("rb").readline() == b"ONE\n"  # the only slot is now taken
            assert exchange(port, b"two\n") == b""
        wait_for(lambda: exchange(port, b"three\n") == b"THREE\n")  # the slot is free again
    finally:
        forwarder.stop()
