"""The forwarder: TCP from containers on the services network's gateway address to the API, data
plane and S3 upstreams this node is configured with (SAGEPORT_API_URL, SAGEPORT_RUNTIME_URL,
SAGEPORT_S3_ENDPOINT_URL), so that
a container reaches Sageport without any access to the host's loopback, on a node whose API and
S3 are on another host as well as on the API's own host.

Bytes are relayed unchanged (SigV4 signs the Host the container used, which upstreams verify as
received); an `https` upstream is reached over TLS. Each node's worker runs one
(gateway/forwarder_agent.py) in a thread of its own.

- It binds with IP_FREEBIND: the address exists only while the services network does, which
  may be created after the worker starts, or removed and created again; a socket bound to it
  serves whenever it exists.
- A port someone else holds (another node's worker of the same stack on the same engine, which
  serves the same upstreams) is tried again every `retry_seconds`, so one of them serves it
  and another takes over when it goes.
- At most `max_connections` connections per port at once: one container cannot exhaust the
  worker's file descriptors for the others.
- `bind` makes a route's listening socket (`bound_socket`): the tests' cluster makes it in an
  engine's network namespace, whose containers' gateway address is not the worker's."""

import asyncio
import errno
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

IP_FREEBIND = 15  # <linux/in.h>; Python's socket module does not name it
CHUNK_BYTES = 256 * 1024
LISTEN_BACKLOG = 1024
CONNECT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Route:
    name: str  # "api" | "runtime" | "s3", for the log
    host: str  # where containers connect
    port: int
    upstream: str  # an http(s) URL: scheme, host and port are used

    def upstream_address(self) -> tuple[str, int, bool]:
        """(host, port, TLS?) of the upstream URL."""
        parts = urlsplit(self.upstream)
        tls = parts.scheme == "https"
        return parts.hostname or "127.0.0.1", parts.port or (443 if tls else 80), tls


class Forwarder:
    def __init__(
        self,
        routes: list[Route],
        *,
        retry_seconds: float = 5.0,
        max_connections: int = 512,
        bind: Callable[[str, int], socket.socket] | None = None,
    ):
        self.routes = routes
        self.bind = bind or bound_socket
        self.retry_seconds = retry_seconds
        self.max_connections = max_connections
        self.bound: dict[str, int] = {}  # route name -> the port it listens on (0 in a route: any)
        self._stop = threading.Event()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run_loop, name="gateway-forwarder", daemon=True)
        thread.start()
        return thread

    def _run_loop(self) -> None:
        asyncio.run(self.run())

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        servers: dict[str, asyncio.Server] = {}
        reported: set[tuple[str, int]] = set()  # (route, errno) already logged: once, not every retry
        try:
            while not self._stop.is_set():
                for route in self.routes:
                    if route.name not in servers:
                        server = await self._listen(route, reported)
                        if server is not None:
                            servers[route.name] = server
                await asyncio.sleep(self.retry_seconds if len(servers) < len(self.routes) else 1.0)
        finally:
            for server in servers.values():
                server.close()

    async def _listen(self, route: Route, reported: set[tuple[str, int]]) -> asyncio.Server | None:
        try:
            sock = self.bind(route.host, route.port)
        except OSError as error:
            if (route.name, error.errno) not in reported:
                reported.add((route.name, error.errno))
                busy = " (another process serves it; tried again)" if error.errno == errno.EADDRINUSE else ""
                log.warning("forwarder: cannot listen on %s:%d for %s: %s%s",
                            route.host, route.port, route.name, error.strerror, busy)
            return None
        slots = asyncio.Semaphore(self.max_connections)
        server = await asyncio.start_server(lambda r, w: self._serve(route, slots, r, w), sock=sock)
        self.bound[route.name] = sock.getsockname()[1]
        log.info("forwarder: %s:%d -> %s", route.host, self.bound[route.name], route.upstream)
        return server

    async def _serve(
        self,
        route: Route,
        slots: asyncio.Semaphore,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        if slots.locked():
            writer.close()  # over the limit: refused at once rather than queued
            return
        async with slots:
            try:
                host, port, tls = route.upstream_address()
                upstream_reader, upstream_writer = await asyncio.wait_for(
                    asyncio.open_connection(host, port, ssl=ssl.create_default_context() if tls else None),
                    CONNECT_TIMEOUT_SECONDS,
                )
            except (OSError, TimeoutError) as error:
                log.warning("forwarder: %s upstream %s unreachable: %s", route.name, route.upstream, error)
                writer.close()
                return
            try:
                await asyncio.gather(_relay(reader, upstream_writer), _relay(upstream_reader, writer))
            finally:
                writer.close()
                upstream_writer.close()


async def _relay(source: asyncio.StreamReader, destination: asyncio.StreamWriter) -> None:
    """Copy until the source ends, then pass the end on (a half-close where the transport has
    one, so an answer may still come back the other way)."""
    try:
        while data := await source.read(CHUNK_BYTES):
            destination.write(data)
            await destination.drain()
        if destination.can_write_eof():
            destination.write_eof()
        else:
            destination.close()
    except (OSError, RuntimeError):  # a peer reset, or writing after the other side closed
        destination.close()


def bound_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restarts: no TIME_WAIT wait
        sock.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
