"""A load generator cheap enough never to be what is measured: one request, SigV4-signed once by
botocore, replayed byte for byte over keep-alive connections (as wrk replays a captured request;
SigV4 lets a signed request be sent again while its date is within the server's skew window).

Each of `concurrency` asyncio tasks owns one connection and sends the next request as soon as the
previous answer is read, so the client spends a few tens of microseconds per request instead of
botocore's signing and urllib3's bookkeeping (which made the Python clients on a 2-core machine
slower than the servers they measured). Bounded: stops after `requests` requests or
`max_seconds` seconds, and every read has a timeout."""

import asyncio
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from bench.common import summarize

READ_TIMEOUT_SECONDS = 30.0


class BadAnswer(Exception):
    """The server answered something the phase's check refuses, or not HTTP/1.1 we can read."""


def signed_request(url: str, body: bytes, headers: dict[str, str], credentials, service: str,
                   region: str) -> bytes:
    """The whole HTTP/1.1 request, signed now, as bytes ready to be written again and again."""
    parts = urlsplit(url)
    request = AWSRequest(method="POST", url=url, data=body, headers=headers)
    SigV4Auth(credentials, service, region).add_auth(request)
    lines = [f"POST {parts.path or '/'} HTTP/1.1", f"Host: {parts.netloc}",
             f"Content-Length: {len(body)}", "Connection: keep-alive"]
    lines += [f"{name}: {value}" for name, value in request.headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def replay(url: str, request: bytes, check: Callable[[int, bytes], bool], requests: int,
           concurrency: int, max_seconds: float) -> dict:
    """Send `request` to `url`'s host from `concurrency` connections until `requests` were started
    or `max_seconds` passed; an answer `check(status, body)` refuses counts as failed (and its
    connection is opened anew). The summary is `bench.common.summarize`'s."""
    return asyncio.run(_replay(urlsplit(url), request, check, requests, concurrency, max_seconds))


async def _replay(url, request: bytes, check, requests: int, concurrency: int, max_seconds: float) -> dict:
    latencies: list[float] = []
    failures = 0
    started_requests = 0
    started = time.perf_counter()
    deadline = started + max_seconds

    async def connection() -> None:
        nonlocal failures, started_requests
        reader = writer = None
        while started_requests < requests and time.perf_counter() < deadline:
            started_requests += 1
            begin = time.perf_counter()
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(url.hostname, url.port or 80)
                writer.write(request)
                async with asyncio.timeout(READ_TIMEOUT_SECONDS):
                    status, body, keep_alive = await _answer(reader)
                if not check(status, body):
                    raise BadAnswer(f"answered {status}: {body[:200]!r}")
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, BadAnswer):
                # OSError includes the timeout; ValueError: a head that is not HTTP
                failures += 1
                keep_alive = False
            else:
                latencies.append(time.perf_counter() - begin)
            if not keep_alive and writer is not None:
                writer.close()
                reader = writer = None
        if writer is not None:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return summarize(latencies, failures, time.perf_counter() - started)


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """(status, body, whether the connection stays open) of one HTTP/1.x response."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, status = status_line.split(" ", 2)[:2]
    headers = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" and (version == "HTTP/1.1" or connection == "keep-alive")
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _chunked(reader)
    else:
        body, keep_alive = await reader.read(), False  # the body ends with the connection
    return int(status), body, keep_alive


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    chunks = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # no trailers are sent by the servers measured
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)
