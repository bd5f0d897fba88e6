"""A node's forwarder (gateway/forwarder.py, its routes from gateway/forwarder_agent.py) with its
listening sockets in the network namespace of the node's engine.

On a real host a node's worker shares the network namespace of its engine, so its forwarder
listens on the address the engine's containers have as their gateway (169.254.170.2, on the
engine's `sageport-services` bridge) and reaches the API, the data plane and S3 over the network.
The tests' cluster (tests/e2e/cluster.py) runs every node's worker on the host instead, beside an
engine in a namespace of its own: this process stands in for the worker's forwarder there. Its
listening sockets are made inside the engine's namespace (a thread enters it only to make them),
and its connections to the API, the data plane and S3 leave from the host's, where those listen
on 127.0.0.1.

    python -m tests.e2e.netns_forwarder /run/netns/<engine's namespace>

It reads the node's settings (SAGEPORT_API_URL, SAGEPORT_RUNTIME_URL, SAGEPORT_S3_ENDPOINT_URL,
the services ports) from its environment, as the worker does."""
import ctypes
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _enter(namespace_fd: int) -> None:
    """Move the calling thread (only it: setns acts on a thread) into a network namespace."""
    if _libc.setns(namespace_fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


@contextmanager
def inside(namespace: str) -> Iterator[None]:
    """The calling thread (only it: setns acts on a thread) in the network namespace `namespace`
    (its path) for the block: the sockets it makes there stay there."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(namespace, os.O_RDONLY)
    try:
        _enter(target)
        try:
            yield
        finally:
            _enter(own)
    finally:
        os.close(target)
        os.close(own)


def binder(namespace: str, bind: Callable[[str, int], socket.socket]) -> Callable[[str, int], socket.socket]:
    """`bind`, run inside `namespace`: the thread enters it, makes the socket and comes back."""

    def bound_inside(host: str, port: int) -> socket.socket:
        with inside(namespace):
            return bind(host, port)

    return bound_inside


def main(namespace: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    from gateway import forwarder
    from gateway.forwarder_agent import routes

    relay = forwarder.Forwarder(routes(), retry_seconds=0.5, bind=binder(namespace, forwarder.bound_socket))
    signal.signal(signal.SIGTERM, lambda *_: relay.stop())
    relay.start().join()


if __name__ == "__main__":
    main(sys.argv[1])
