"""The data plane's connections to the serving containers (on both ports: api_port.py runs the same
application): an HTTP/1.1 client of its own on httptools' parser (uvicorn's), for InvokeEndpoint's
answers read whole, streamed answers read piece by piece, and a multi-model container's model
management (`GET`/`POST`/`DELETE /models...`).

Why not aiohttp's client, which the data plane used before: its reader costs several Python calls
for every piece it hands out (its chunk bookkeeping, then a `resume_reading` that re-enters the
HTTP parser), and a token stream is one HTTP chunk per token, so that per-token cost was most of
the data plane's share of a stream (docs/performance.md, "Response streaming"); its request path
is as heavy (a session's tracing, timeouts and cookie hooks). Here a request is one write of bytes
made once, and each socket read is parsed in one call whose `on_body` callbacks queue the pieces
(each chunk's data, or a part of one not complete yet; for an answer that is not chunked, what
the socket delivered), which the reader takes all at once.

Connections are kept alive per container between requests (a request pays no TCP handshake, and
no new port through Docker's proxy), reused most recent first and closed after IDLE_SECONDS
unused. exchange.py holds what a request's exchange with a container is held to: socket options,
the 250 ms connect (else Refused), the invocation timeout over the whole exchange, body included
(else TimedOut), the outcomes, and when a request goes again on a new connection (a reused one
that failed before any answer: exchange.may_send_again). Back pressure: the container's socket
is not read while more than HIGH_WATER bytes of its answer wait."""

import asyncio
import ipaddress
import re
import socket
from collections.abc import Mapping

import httptools
from multidict import CIMultiDict

from hosting.runtime_api.exchange import (
    CONNECT_TIMEOUT_SECONDS,
    SOCKET_OPTIONS,
    Answer,
    NoAnswer,
    Refused,
    TimedOut,
    may_send_again,
)

HIGH_WATER = 256 * 1024  # bytes of an answer queued before its container's socket is not read
LOW_WATER = HIGH_WATER // 4  # ... and read again once the queue is down to this
IDLE_SECONDS = 15.0  # a kept-alive connection unused this long is closed
_BREAKS_A_LINE = re.compile("[\r\n]")
_SPLITS_THE_LINE = re.compile("[\x00-\x20\x7f]")  # what http.client refuses in a request line


class Exchange(asyncio.Protocol):
    """One connection to a container; between a request's `send` and `release`, its answer:
    `status`, `headers` (case-insensitive), then `take` / `read_whole` for the body."""

    def __init__(self, pool: "Upstream", key: tuple[str, int]):
        self.pool, self.key = pool, key
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_timer: asyncio.TimerHandle | None = None  # while kept in the pool
        self._deadline: asyncio.TimerHandle | None = None
        self._begin()

    def _begin(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self.status, self.headers = 0, CIMultiDict()
        self.answered = False  # any byte of an answer came back
        self._head = self._complete = self._paused = self._keep_alive = False
        self._interim = False  # the message being parsed is a 1xx, passed over (RFC 9110 15.2)
        self._overrun = False  # bytes came after the answer: the connection cannot carry another
        self._pieces: list[bytes] = []
        self._queued = 0  # bytes in _pieces
        self._error: Exception | None = None
        self._waiter: asyncio.Future | None = None

    # --- The exchange ---------------------------------------------------------------------

    async def send(self, request: bytes, deadline: float) -> "Exchange":
        """Write the request and wait for its answer's head (until `deadline`, the loop's time)."""
        self._begin()
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_at(deadline, self._fail, TimedOut())
        self.transport.write(request)
        while not self._head:
            if self._error is not None:
                raise self._error
            await self._wait()
        return self

    async def take(self, limit: int) -> list[bytes]:
        """The next pieces of the body, waited for: all those queued (at least one, about `limit`
        bytes at most); none at the body's end. Raises NoAnswer or TimedOut once the pieces that
        came before the failure were taken."""
        while not self._pieces:
            if self._error is not None:
                raise self._error
            if self._complete:
                return []
            await self._wait()
        if self._queued <= limit:
            batch, self._pieces, size = self._pieces, [], self._queued
        else:
            batch, size = self._split(limit)
        self._queued -= size
        if self._paused and self._queued <= LOW_WATER and not self.closed:
            self._paused = False
            self.transport.resume_reading()
        return batch

    async def read_whole(self) -> bytes:
        parts = []
        while batch := await self.take(HIGH_WATER):
            parts.extend(batch)
        return b"".join(parts)

    def release(self) -> None:
        """The exchange is over: the connection goes back to the pool when its answer was read to
        the end and the container keeps it open, else it is closed."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._complete and self._keep_alive and self._error is None and not self.closed:
            if self._paused:  # a reader that stopped early (its client gone) left it paused
                self._paused = False
                self.transport.resume_reading()
            self.pool.keep(self)
        else:
            self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _split(self, limit: int) -> tuple[list[bytes], int]:
        size = count = 0
        while count < len(self._pieces) and (count == 0 or size + len(self._pieces[count]) <= limit):
            size += len(self._pieces[count])
            count += 1
        batch, self._pieces = self._pieces[:count], self._pieces[count:]
        return batch, size

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _fail(self, error: Exception) -> None:
        if self._error is None and not self._complete:
            self._error = error
            self.close()
        self._wake()

    # --- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._complete:  # after the answer, or while kept idle: nothing may come
            self._overrun = True
        else:
            self.answered = True
            try:
                self._parser.feed_data(data)
            except (httptools.HttpParserError, httptools.HttpParserUpgrade) as error:
                if self._complete:  # what followed the answer is not even HTTP
                    self._overrun = True
                else:
                    self._fail(NoAnswer(f"the container's answer is not HTTP/1.1 as expected: {error!r}"))
        if self._overrun:  # an answer longer than it said, or a second one: never reused
            self._keep_alive = False
            self.close()
        elif self._queued > HIGH_WATER and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.idle_timer is not None:
            self.pool.forget(self)
        if exc is None and self._head and not self._complete and _ends_with_connection(self.headers):
            self._complete = True  # an answer without length or chunks ends as its connection does
        self._fail(NoAnswer(str(exc) if exc else "the container closed the connection"))

    # --- httptools' callbacks -------------------------------------------------------------
    # Those of bytes parsed after the answer (in the same read) only mark the connection spoilt.

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._complete:
            self._overrun = True
        else:
            self.headers.add(name.decode("latin-1"), value.decode("latin-1"))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if self._complete:
            self._overrun = True
        elif status < 200:  # an interim answer (100 Continue, 103 Early Hints): the real one follows
            self._interim, self.headers = True, CIMultiDict()
        else:
            self.status, self._head = status, True

    def on_body(self, body: bytes) -> None:
        if self._complete:
            self._overrun = True
        else:
            self._pieces.append(body)
            self._queued += len(body)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
        elif self._complete:
            self._overrun = True
        else:  # asked now: once the message is parsed, the parser is reset for the next one
            self._complete, self._keep_alive = True, self._parser.should_keep_alive()


class Upstream:
    """One per event loop; call `close` when done, in that loop."""

    def __init__(self, timeout_seconds: float):
        self._timeout = timeout_seconds
        self._idle: dict[tuple[str, int], list[Exchange]] = {}

    async def post(
        self, address: str, port: int, body: bytes, headers: Mapping[str, str],
        method: str = "POST", path: str = "/invocations",
    ) -> Answer:
        """POST /invocations (or `method` `path`: a multi-model container's model management) to
        a container and read the whole answer; raises Refused, NoAnswer or TimedOut."""
        exchange = await self.send(address, port, body, headers, method, path)
        try:
            return Answer(exchange.status, exchange.headers, await exchange.read_whole())
        finally:
            exchange.release()

    async def send(
        self, address: str, port: int, body: bytes, headers: Mapping[str, str],
        method: str = "POST", path: str = "/invocations",
    ) -> Exchange:
        """POST /invocations (or `method` `path`) to a container, returning once the answer's head
        arrived (its body is left to `take`, then `release()`). Raises Refused, NoAnswer or TimedOut."""
        deadline = asyncio.get_running_loop().time() + self._timeout
        request = _request(address, port, body, headers, method, path)
        connection = self._kept(address, port)
        if connection is not None:
            try:
                return await connection.send(request, deadline)
            except NoAnswer:
                connection.release()
                if not may_send_again(reused=True, answered=connection.answered):
                    raise
            except BaseException:
                connection.release()
                raise
        connection = await self._connect(address, port, deadline)
        try:
            return await connection.send(request, deadline)
        except BaseException:
            connection.release()
            raise

    def keep(self, connection: Exchange) -> None:
        self._idle.setdefault(connection.key, []).append(connection)
        connection.idle_timer = asyncio.get_running_loop().call_later(IDLE_SECONDS, self._expire, connection)

    async def close(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def forget(self, connection: Exchange) -> None:
        """A kept connection that closed (the container's idle timeout) or expired leaves the pool."""
        connection.idle_timer.cancel()
        connection.idle_timer = None
        connections = self._idle.get(connection.key, [])
        if connection in connections:
            connections.remove(connection)
        if not connections:
            self._idle.pop(connection.key, None)

    def _kept(self, address: str, port: int) -> Exchange | None:
        connections = self._idle.get((address, port))
        while connections:
            connection = connections[-1]
            self.forget(connection)
            if not connection.closed:
                return connection
        return None

    def _expire(self, connection: Exchange) -> None:
        self.forget(connection)
        connection.close()

    async def _connect(self, address: str, port: int, deadline: float) -> Exchange:
        """A new connection, accepted within CONNECT_TIMEOUT_SECONDS (else Refused: nothing sent)."""
        loop = asyncio.get_running_loop()
        left = deadline - loop.time()
        if left <= 0:
            raise TimedOut()
        sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            for option in SOCKET_OPTIONS:
                sock.setsockopt(*option)
            await asyncio.wait_for(_connected(loop, sock, address, port), min(CONNECT_TIMEOUT_SECONDS, left))
            key = (address, port)
            _, connection = await loop.create_connection(lambda: Exchange(self, key), sock=sock)
        except (OSError, TimeoutError):
            sock.close()
            raise Refused() from None
        except BaseException:
            sock.close()
            raise
        return connection


async def _connected(loop: asyncio.AbstractEventLoop, sock: socket.socket, address: str, port: int) -> None:
    """Connect to the address as given when it is one, else to the first the name resolves to."""
    try:
        ipaddress.ip_address(address)
        target = address
    except ValueError:
        found = await loop.getaddrinfo(address, port, family=sock.family, type=socket.SOCK_STREAM)
        target = found[0][4][0]
    await loop.sock_connect(sock, (target, port))


def _request(
    address: str, port: int, body: bytes, headers: Mapping[str, str], method: str, path: str
) -> bytes:
    """The request: Host, the headers given, the body's length; the body."""
    if _SPLITS_THE_LINE.search(method) or _SPLITS_THE_LINE.search(path):
        raise ValueError(f"a space or a control character in {method!r} {path!r} breaks the request line")
    host = f"[{address}]" if ":" in address else address
    lines = [f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"]
    for name, value in headers.items():
        if _BREAKS_A_LINE.search(name) or _BREAKS_A_LINE.search(value):
            raise ValueError(f"a newline in the header {name!r} would end the request's head")
        lines.append(f"{name}: {value}\r\n")
    lines.append(f"Content-Length: {len(body)}\r\n\r\n")
    return "".join(lines).encode("latin-1") + body


def _ends_with_connection(headers: CIMultiDict) -> bool:
    """An answer delimited by the end of its connection (RFC 9112 section 6.3): neither chunked
    nor of a given length."""
    return "Content-Length" not in headers and "chunked" not in headers.get("Transfer-Encoding", "").lower()
