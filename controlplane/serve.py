"""Runs the API (controlplane.wsgi) under granian's WSGI server:

    python -m controlplane.serve --fd N [--fd M ...]   # sockets the supervisor listens on, one per process
    python -m controlplane.serve --listen HOST:PORT [--workers 4]

granian parses HTTP and writes answers in Rust, outside the GIL; gunicorn (the server before)
spent ~27 % of the API's CPU doing it in Python. Measured with bench/api.py on 2 cores, the same
4 processes x 2 threads: 1.15-1.5x gunicorn's replayed DescribeTrainingJob and ListTrainingJobs
(docs/performance.md). Each process accepts on a socket of its own on the one port
(SO_REUSEPORT): the kernel spreads connections over them. One place for the server's options
(devstack/stack.py, compose.yaml and the Dockerfile all start this)."""

import argparse
import multiprocessing
import os
import socket
from collections.abc import Callable
from functools import partial

from granian.constants import HTTPModes, Interfaces, Loops
from granian.log import LogLevels
from granian.net import SocketHolder
from granian.server import Server

from controlplane.startup import exit_on_settings_error
from runtime.child_process import die_with_parent

APP = "controlplane.wsgi:application"
STOP_SECONDS = 30  # what a request still running at SIGTERM gets before its worker is killed


def main(argv: list[str] | None = None) -> None:
    options = _arguments(argv)
    _read_settings()
    settings = dict(
        interface=Interfaces.WSGI,
        blocking_threads=options.threads,
        http=HTTPModes.http1,
        websockets=False,
        loop=Loops.uvloop,
        log_level=LogLevels.error,  # not its advice on workers per core: 4 x 2 was measured
        log_access=False,  # a line per request is a measurable share of its cost
        respawn_failed_workers=True,  # a worker that dies is replaced at once
        workers_kill_timeout=STOP_SECONDS,
    )
    if options.fd:
        server = _InheritedSockets(options.fd, APP, workers=len(options.fd), **settings)
    else:
        host, _, port = options.listen.rpartition(":")
        server = Server(APP, address=host.strip("[]"), port=int(port), workers=options.workers, **settings)
    server.serve(target_loader=partial(load_application, server_pid=os.getpid()))


def _read_settings() -> None:
    """A bad setting stops the server here, with one line on stderr, before any worker starts:
    granian starts a worker that exits again and again."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    with exit_on_settings_error():
        from django.conf import settings

        settings.INSTALLED_APPS  # noqa: B018 (the first read imports the settings module)


def load_application(target: str, server_pid: int) -> Callable:
    """Runs in each worker before it serves: the worker dies with the server's main process (a
    worker orphaned by a SIGKILL would go on accepting connections), then imports the
    application."""
    die_with_parent(server_pid)()
    module, _, name = target.partition(":")
    return _without_server_environment(getattr(__import__(module, fromlist=[name]), name))


def _without_server_environment(application: Callable) -> Callable:
    """granian starts each request's environ from a copy of the process's environment
    (granian/wsgi.py). Those variables are no part of the request: an `HTTP_PROXY` would read as
    a request header, and the settings' URLs would sit in request.META. They are taken out, but
    a key the request itself set to another value stays."""
    inherited = dict(os.environ)

    def request_environ_only(environ: dict, start_response: Callable):
        for key, value in inherited.items():
            if environ.get(key) == value:
                del environ[key]
        return application(environ, start_response)

    return request_environ_only


class _InheritedSockets(Server):
    """granian's server on listening sockets it is given, worker i on the i-th. granian binds its
    own; the supervisor's outlive every server that serves them, so that connections wait in
    their backlogs while the API restarts."""

    def __init__(self, fds: list[int], *args, **kwargs):
        # Forked workers inherit the descriptors at their numbers, which is what granian hands
        # them; a worker started afresh (spawn, forkserver: Python 3.14's default) would have none.
        multiprocessing.set_start_method("fork", force=True)
        super().__init__(*args, **kwargs)
        self._sockets = [_tcp_listener(fd) for fd in fds]

    def _init_shared_socket(self):
        self._ssp = None  # nothing for the workers to bind

    def _spawn_worker(self, idx, target, callback_loader):
        # The socket granian hands every worker, chosen per worker (respawns keep the index).
        sock = self._sockets[idx]
        self._sso, self._sfd = sock, sock.fileno()
        self._shd = SocketHolder(sock.fileno(), False, self.backlog)  # TCP, not a Unix socket
        return super()._spawn_worker(idx, target, callback_loader)

    def _drop_shared_socket(self):
        for sock in self._sockets:
            sock.close()
        self._sockets, self._sso = [], None


def _tcp_listener(fd: int) -> socket.socket:
    sock = socket.socket(fileno=fd)  # family and type read from the descriptor
    sock.set_inheritable(True)
    # granian sets TCP_NODELAY on the sockets it binds, not on connections: Linux copies it from
    # the listener to what it accepts. Without it each answer's last write waited for the
    # client's delayed ACK (p99 ~50 ms).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fd", type=int, action="append",
                       help="a listening socket inherited from the supervisor; one per process")
    where.add_argument("--listen", help="HOST:PORT to bind (a socket per process)")
    # Four processes of 2 threads. One thread per process served 1.12-1.26x the replayed
    # Describe on 2 cores (a second thread costs each request ~25 % more CPU under full load),
    # but then a runtime request on this port holds its process while the container answers,
    # and a container that calls this API meanwhile (its credentials, STS, another endpoint:
    # containers reach Sageport only through this port) lands on that process one time in
    # four and waits until the invocation times out (docs/performance.md).
    parser.add_argument("--workers", type=int, default=4, help="processes, with --listen")
    parser.add_argument("--threads", type=int, default=2, help="request threads per process")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
