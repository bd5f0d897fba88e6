"""The API's server (controlplane/serve.py): granian on the sockets the supervisor hands it, one
per worker, with Nagle's algorithm off, and workers that die with it."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from controlplane import serve
from devstack import stack

DEADLINE_SECONDS = 60.0


def test_connections_accepted_on_an_inherited_socket_send_without_nagle_delay():
    # Linux copies TCP_NODELAY from the listener to what it accepts; granian sets it on no
    # connection of a socket it did not bind, and each answer waited for a delayed ACK (~40 ms).
    with socket.create_server((stack.LOOPBACK, 0)) as plain:
        listener = serve._tcp_listener(os.dup(plain.fileno()))
        with listener, socket.create_connection(listener.getsockname()):
            accepted, _ = listener.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


def test_the_application_sees_the_request_s_environ_without_the_server_process_s_variables(monkeypatch):
    # granian copies the process's environment into every request's environ.
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("SAGEPORT_DATABASE_URL", "postgres://sageport:pw@db/sageport")
    application = serve._without_server_environment(lambda environ, start_response: dict(environ))
    request = {"REQUEST_METHOD": "POST", "PATH_INFO": "/", "HTTP_X_AMZ_TARGET": "SageMaker.ListModels"}

    assert application({**os.environ, **request}, None) == request
    with_a_proxy_header = {**request, "HTTP_PROXY": "sent by the client"}
    assert application({**os.environ, **with_a_proxy_header}, None) == with_a_proxy_header


@pytest.fixture
def two_ports_served(tmp_path):
    """The server on two sockets of different ports (so that each worker's is told apart)."""
    listeners = [socket.create_server((stack.LOOPBACK, 0)) for _ in range(2)]
    fds = [listener.fileno() for listener in listeners]
    server = subprocess.Popen(
        [sys.executable, "-m", "controlplane.serve", "--threads", "1",
         *(word for fd in fds for word in ("--fd", str(fd)))],
        cwd=stack.PROJECT_DIR, pass_fds=fds, start_new_session=True,
        env={**os.environ, "SAGEPORT_DATA_DIR": str(tmp_path),
             "DJANGO_SETTINGS_MODULE": "controlplane.settings"},
    )
    try:
        yield server, [listener.getsockname()[1] for listener in listeners]
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        for listener in listeners:
            listener.close()


def test_each_worker_serves_the_socket_handed_for_it_and_dies_with_the_server(two_ports_served):
    server, ports = two_ports_served
    for port in ports:
        assert _answer_status(f"http://{stack.LOOPBACK}:{port}/console/") == 200
    workers = _children(server.pid)
    assert len(workers) == 2

    server.kill()  # no chance to stop them: they must notice by themselves
    server.wait()

    deadline = time.monotonic() + DEADLINE_SECONDS
    while any(_running(pid) for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived the server"
        time.sleep(0.05)


def _answer_status(url: str) -> int:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:  # the workers import Django first
        try:
            with urllib.request.urlopen(url, timeout=DEADLINE_SECONDS) as answer:
                return answer.status
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _children(pid: int) -> list[int]:
    listing = subprocess.run(["ps", "--ppid", str(pid), "-o", "pid="], capture_output=True, text=True)
    return [int(word) for word in listing.stdout.split()]


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
