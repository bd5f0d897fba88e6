"""The data plane's relay of a token stream, in process: a loopback server answers chunked, one
HTTP chunk per token (as examples/token-stream does), read (a) directly with aiohttp and (b) through
streaming.Relay (its container read by upstream.Upstream), whose ASGI `send` writes
each body to a socket that a thread drains (one write per `send`, as uvicorn's transport does):
tokens per second (best of --runs) and their ratio, and the median time to the first piece of a
short generation. No Docker, no HTTP server in front of the relay, no signing: the relay's own
cost (bench/stream.py measures the whole stack).

    make bench-stream-relay [ARGS='--tokens 20000 --runs 10']
"""

import argparse
import asyncio
import socket
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import aiohttp
import django

django.setup()  # the relay's module imports the data plane's metrics models

from hosting.runtime_api import streaming  # noqa: E402
from hosting.runtime_api.upstream import Upstream  # noqa: E402


class _Tokens(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each token leaves at once, as the example server's do

    def do_POST(self) -> None:
        tokens = int(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index in range(tokens):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b"tok%d " % index), b"tok%d " % index))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, *args) -> None:
        pass


async def _direct(session, url: str, tokens: int, first: list[float]) -> None:
    async with session.post(url, data=str(tokens)) as response:
        async for _ in response.content.iter_chunks():
            first.append(time.perf_counter())


async def _relayed(
    upstream: Upstream, port: int, tokens: int, first: list[float], client: socket.socket
) -> None:
    answer = await upstream.send("127.0.0.1", port, str(tokens).encode(), {})
    relay = streaming.Relay(answer, SimpleNamespace(variant_name="AllTraffic"),
                            SimpleNamespace(ended=lambda choice, status: None), SimpleNamespace(id="r"))

    async def send(message):
        if message.get("body"):
            first.append(time.perf_counter())
            client.sendall(message["body"])

    async def receive():
        await asyncio.Event().wait()

    await relay.send(send, receive, b"date")


async def _best(read, runs: int, tokens: int) -> float:
    """The best tokens per second of `runs` generations of `tokens`."""
    best = 0.0
    for _ in range(runs):
        began = time.perf_counter()
        await read(tokens, [])
        best = max(best, tokens / (time.perf_counter() - began))
    return best


async def _first_byte_ms(read, requests: int) -> float:
    """The median milliseconds from sending a request of 8 tokens to holding (or sending on) its
    first piece."""
    found = []
    for _ in range(requests):
        first, began = [], time.perf_counter()
        await read(8, first)
        found.append(1000 * (first[0] - began))
    return statistics.median(found)


def _read_all(sock: socket.socket) -> None:
    """The client's side of the relay: reads what it sends, as fast as it comes, until closed."""
    while sock.recv(1 << 20):
        pass


async def main(options) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Tokens)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/invocations"
    client, drain = socket.socketpair()
    threading.Thread(target=_read_all, args=(drain,), daemon=True).start()
    upstream = Upstream(timeout_seconds=60)
    port = server.server_address[1]
    async with aiohttp.ClientSession() as session:
        paths = {"direct": lambda tokens, first: _direct(session, url, tokens, first),
                 "relayed": lambda tokens, first: _relayed(upstream, port, tokens, first, client)}
        rate = {path: await _best(read, options.runs, options.tokens) for path, read in paths.items()}
        ttfb = {path: await _first_byte_ms(read, options.requests) for path, read in paths.items()}
    await upstream.close()
    client.close()
    server.shutdown()
    ratio = rate["relayed"] / rate["direct"]
    print(f"tokens/s (best of {options.runs} generations of {options.tokens}): direct "
          f"{rate['direct']:,.0f}, relayed {rate['relayed']:,.0f}, ratio {ratio:.2f}x")
    print(f"first piece p50 over {options.requests} requests: direct {ttfb['direct']:.2f} ms, "
          f"relayed {ttfb['relayed']:.2f} ms (+{ttfb['relayed'] - ttfb['direct']:.2f} ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=200, help="requests timed to the first piece")
    asyncio.run(main(parser.parse_args()))
