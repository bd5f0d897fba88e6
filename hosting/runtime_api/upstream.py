"""The data plane's connections to the serving containers: one aiohttp session per process, whose
connector keeps connections to each container alive between requests (a request pays no TCP
handshake, and no new port through Docker's proxy). What it shares with the API port's
connections (blocking_upstream.py) is exchange.py's: socket options, timeouts, outcomes, and when a
request goes again on a new connection."""

import socket
from types import SimpleNamespace

import aiohttp

from hosting.runtime_api.exchange import (
    CONNECT_TIMEOUT_SECONDS,
    SOCKET_OPTIONS,
    Answer,
    NoAnswer,
    Refused,
    TimedOut,
    may_send_again,
)


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
        """POST /invocations to a container and read the whole answer; raises Refused, NoAnswer
        or TimedOut."""
        response = await self.send(address, port, body, headers)
        try:
            return Answer(response.status, response.headers, await read_whole(response))
        finally:
            response.release()

    async def send(
        self, address: str, port: int, body: bytes, headers: dict[str, str]
    ) -> aiohttp.ClientResponse:
        """POST /invocations to a container, returning once the answer's head arrived: its body is
        left to read (`read_whole` or `batches`, then `release`). Raises Refused, NoAnswer or
        TimedOut; the invocation timeout covers the whole exchange, body included."""
        url = f"http://{_url_host(address)}:{port}/invocations"
        attempt = SimpleNamespace(reused=False)
        try:
            return await _send(self._pooled, url, body, headers, attempt)
        except NoAnswer:
            if not may_send_again(attempt.reused, answered=False):
                raise
        return await _send(self._fresh, url, body, headers, SimpleNamespace(reused=False))


async def read_whole(response: aiohttp.ClientResponse) -> bytes:
    """The rest of an answer's body; raises NoAnswer or TimedOut."""
    return await _failing_as_no_answer(response.read())


async def batches(response: aiohttp.ClientResponse, limit: int):
    """An answer's body as lists of pieces: each HTTP chunk of a chunked answer (a big one in
    several pieces), else whatever the socket delivered since the last piece. A list holds the
    first piece as soon as it arrives, with those already buffered behind it, up to about `limit`
    bytes (never waiting for more): a consumer writes many small chunks at once, yet none later
    than it came. aiohttp stops reading the socket while its buffer is full, so a slow consumer
    holds the container back instead of the data plane buffering its answer. Raises NoAnswer or
    TimedOut."""
    taken = 0  # bytes read out of the body: fewer than aiohttp received means some are buffered
    while True:
        batch, size = await _failing_as_no_answer(_next_batch(response.content, taken, limit))
        if not batch:
            return
        taken += size
        yield batch


async def _next_batch(content: aiohttp.StreamReader, taken: int, limit: int) -> tuple[list[bytes], int]:
    """The next piece, waited for, and those buffered behind it; none at the body's end."""
    piece, chunk_ended = await content.readchunk()
    if not piece and not chunk_ended:  # aiohttp's end of the body
        return [], 0
    batch, size = [piece], len(piece)
    # readchunk returns without suspending while the buffer holds data: no event-loop turn.
    while size < limit and content.total_bytes > taken + size:
        piece, _ = await content.readchunk()
        batch.append(piece)
        size += len(piece)
    return batch, size


async def _send(session, url: str, body: bytes, headers: dict[str, str], attempt) -> aiohttp.ClientResponse:
    try:
        return await session.post(url, data=body, headers=headers, trace_request_ctx=attempt)
    except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError):
        raise Refused() from None  # refused, or not accepted in 250 ms: nothing was sent
    except TimeoutError:
        raise TimedOut() from None
    except aiohttp.ClientError as error:  # closed, reset or cut short: no answer
        raise NoAnswer(str(error) or type(error).__name__) from None


async def _failing_as_no_answer(reading):
    """Await a read of an answer's body: a timeout is the invocation's, a cut connection no answer."""
    try:
        return await reading
    except TimeoutError:
        raise TimedOut() from None
    except aiohttp.ClientError as error:
        raise NoAnswer(str(error) or type(error).__name__) from None


def _session(
    timeout: aiohttp.ClientTimeout, connector: aiohttp.TCPConnector, tracing: list
) -> aiohttp.ClientSession:
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
    for option in SOCKET_OPTIONS:
        sock.setsockopt(*option)
    return sock


async def _note_reused(session, context, params) -> None:
    context.trace_request_ctx.reused = True


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address

