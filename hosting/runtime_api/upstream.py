"""The data plane's connections to the serving containers: one aiohttp session per process, whose
connector keeps connections to each container alive between requests (a request pays no TCP
handshake, and no new port through Docker's proxy).

A kept-alive connection can be closed by the container (its server's idle timeout) just as a
request is sent on it: the request then fails before any answer, through no fault of the
container. Such a request is sent once more on a new connection: the container never answered,
so it never acted on it (HTTP/1.1, RFC 9112 section 9.3.1: a client may retry when the connection
closed before any part of the response). A request that fails on a new connection is not retried.

A container whose host vanishes (its power or its link lost) leaves its kept-alive connections
open here, and a request sent on one is never acknowledged: it would wait the whole invocation
timeout. Every connection ends when data it sent stays unacknowledged `UNACKNOWLEDGED_SECONDS`
(TCP_USER_TIMEOUT: a live container's kernel acknowledges at once, however long its model takes
to answer), so that such a request counts as unanswered on a reused connection, goes again on a
new one, which the lost host does not accept within 250 ms, and another container is tried
(the 250 ms re-route of docs/operations.md, "Adding a node")."""

import socket
from dataclasses import dataclass
from types import SimpleNamespace

import aiohttp
from multidict import CIMultiDictProxy

# Containers must accept a connection within 250 ms (SageMaker's contract).
CONNECT_TIMEOUT_SECONDS = 0.25
UNACKNOWLEDGED_SECONDS = 1.0  # far above a round trip between hosts, far below the invocation timeout


class Refused(Exception):
    """The container did not accept the connection (nothing was sent): try another one."""


class NoAnswer(Exception):
    """The container closed the connection or failed mid-request: it gave no answer."""


class TimedOut(Exception):
    """The container did not answer within the invocation timeout."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: CIMultiDictProxy[str]
    body: bytes


class Upstream:
    """Call `open` in the event loop that will use it, `close` when done."""

    def __init__(self, timeout_seconds: float):
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds, sock_connect=CONNECT_TIMEOUT_SECONDS)
        self._pooled: aiohttp.ClientSession | None = None
        self._fresh: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        tracing = aiohttp.TraceConfig()
        tracing.on_connection_reuseconn.append(_note_reused)
        pooled = aiohttp.TCPConnector(limit=0, socket_factory=_socket)
        self._pooled = _session(self._timeout, pooled, [tracing])
        # One connection per request, closed after it: for the retry that must not meet the pool.
        self._fresh = _session(
            self._timeout, aiohttp.TCPConnector(limit=0, force_close=True, socket_factory=_socket), []
        )

    async def close(self) -> None:
        for session in (self._pooled, self._fresh):
            if session is not None:
                await session.close()

    async def post(self, address: str, port: int, body: bytes, headers: dict[str, str]) -> Answer:
        """POST /invocations to a container; raises Refused, NoAnswer or TimedOut."""
        url = f"http://{_url_host(address)}:{port}/invocations"
        attempt = SimpleNamespace(reused=False, answered=False)
        try:
            return await _exchange(self._pooled, url, body, headers, attempt)
        except NoAnswer:
            if not attempt.reused or attempt.answered:
                raise
        return await _exchange(self._fresh, url, body, headers, SimpleNamespace(reused=False, answered=False))


async def _exchange(session, url: str, body: bytes, headers: dict[str, str], attempt) -> Answer:
    try:
        async with session.post(url, data=body, headers=headers, trace_request_ctx=attempt) as response:
            attempt.answered = True
            return Answer(response.status, response.headers, await response.read())
    except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError):
        raise Refused() from None  # refused, or not accepted in 250 ms: nothing was sent
    except TimeoutError:
        raise TimedOut() from None
    except aiohttp.ClientError as error:  # closed, reset or cut short: no (whole) answer
        raise NoAnswer(str(error) or type(error).__name__) from None


def _session(
    timeout: aiohttp.ClientTimeout, connector: aiohttp.TCPConnector, tracing: list
) -> aiohttp.ClientSession:
    # Nagle's algorithm would hold small requests back: aiohttp sets TCP_NODELAY on its sockets.
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        trace_configs=tracing,
        # The container receives the headers the client signed and the platform's User-Agent
        # (contract.forwarded_headers), and no others of aiohttp's own.
        skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
        cookie_jar=aiohttp.DummyCookieJar(),
        raise_for_status=False,
    )


def _socket(addr_info) -> socket.socket:
    family, type_, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=type_, proto=proto)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, round(UNACKNOWLEDGED_SECONDS * 1000))
    return sock


async def _note_reused(session, context, params) -> None:
    context.trace_request_ctx.reused = True


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address

