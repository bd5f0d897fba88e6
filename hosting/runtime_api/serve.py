"""Runs the data plane (dataplane.py) under uvicorn:

    python -m hosting.runtime_api.serve --fd N            # a socket the supervisor listens on
    python -m hosting.runtime_api.serve --listen HOST:PORT

Not `uvicorn --fd`: uvicorn takes an inherited descriptor for a Unix socket, so the event loop
leaves Nagle's algorithm on for every connection, and each answer (headers, then body: two
writes) waited for the client's delayed ACK, ~40 ms. The socket is taken here with its real
family, and the loop sets TCP_NODELAY on what it accepts. One place for uvicorn's options too
(devstack/stack.py and compose.yaml both start this)."""

import argparse
import socket

import uvicorn
from uvicorn.supervisors import Multiprocess

APP = "hosting.runtime_api.asgi:app"


def main(argv: list[str] | None = None) -> None:
    options = _arguments(argv)
    config = uvicorn.Config(
        APP,
        workers=options.workers,
        loop="uvloop",  # measured faster than asyncio's own loop
        http="httptools",  # the C parser (h11, the fallback, is pure Python)
        lifespan="on",  # opens the container connection pool and loads the routing table
        access_log=False,  # a log line per request is a measurable share of its cost
        server_header=False,
        date_header=False,  # the app sets Date itself, as on every AWS answer
        timeout_graceful_shutdown=10,
        # Longer than uvicorn's 5 s: a client sending on a kept connection just as the server
        # closes it for idleness loses that request (boto3 retries it, a plain client does not).
        # Clients keep connections without a limit of their own, so the longer the fewer races;
        # 75 s outlasts the 60 s idle timeout AWS's load balancers use.
        timeout_keep_alive=75,
    )
    sockets = [listening_socket(options)]
    if options.workers > 1:
        Multiprocess(config, sockets=sockets).run()
    else:
        uvicorn.Server(config).run(sockets=sockets)


def listening_socket(options: argparse.Namespace) -> socket.socket:
    if options.fd is not None:
        return socket.socket(fileno=options.fd)  # family and type read from the descriptor
    host, _, port = options.listen.rpartition(":")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), int(port)))
    sock.listen(1024)
    return sock


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fd", type=int, help="a listening socket inherited from the supervisor")
    where.add_argument("--listen", help="HOST:PORT to bind")
    parser.add_argument("--workers", type=int, default=1)
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
