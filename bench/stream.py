"""InvokeEndpointWithResponseStream against the same container's stream read directly, in one run.

Deploys the token-stream example (`sageport-examples/python-stream:latest`, built by
scripts/build-images.sh) behind an endpoint of a running Sageport, then measures, one request at a
time, (a) straight from the container's published port (urllib3, its chunks as they come) and
(b) through InvokeEndpointWithResponseStream with boto3 (signing and event-stream parsing
included, as users see it), (c) through it signed by hand and its frames decoded by botocore's
EventStreamBuffer alone (the data plane's cost without boto3's per-event parsing), and (d) the same
signed request read as bytes, its frames not decoded (what the data plane delivers, before any
client's decoding: its throughput is counted in the tokens the frames carry):

- time to first byte: from sending a request to holding its first token, --ttfb-requests times
  (a prompt of a few tokens); p50 and p99 of each path, the difference in ms and the ratio;
- tokens per second: a --tokens-long generation read to the end, --throughput-runs times (the
  best run of each path), and the ratio.

Bounded: each phase stops after its count or --max-seconds. The endpoint is deleted at the end.

    make bench-stream [ARGS='--tokens 20000']

or, on a running stack:

    . .sageport/env && .venv/bin/python -m bench.stream
"""

import argparse
import json
import sys
import time
import uuid

import boto3
import urllib3
from botocore.config import Config
from botocore.eventstream import EventStreamBuffer

try:
    from bench.common import SignedHttp
    from bench.invoke import container_port, delete_endpoint, deploy_endpoint
except ModuleNotFoundError:  # run as a script, the repository root is not on the path
    sys.exit("run it from the repository root as: .venv/bin/python -m bench.stream")

IMAGE = "sageport-examples/python-stream:latest"


def main() -> int:
    options = _arguments()
    sagemaker = boto3.client("sagemaker")
    runtime = boto3.client("sagemaker-runtime", config=Config(retries={"max_attempts": 1}))
    name = f"bench-stream-{uuid.uuid4().hex[:8]}"
    try:
        port = container_port(deploy_endpoint(sagemaker, name, {"Image": IMAGE}))
        direct = _direct(urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=1))
        streamed = _streamed(runtime, name)
        framed = _framed(runtime, name)
        undecoded = _undecoded(runtime, name)
        short, long = _request(8), _request(options.tokens)
        paths = (("direct", direct), ("boto3", streamed), ("frames", framed), ("bytes", undecoded))
        for _, read in paths:  # warm-up: connections, signing keys, the routing table
            b"".join(read(short))
        ttfb = {path: _ttfb(read, short, options) for path, read in paths}
        rate = {path: _rate(read, long, options, _words_in_frames if path == "bytes" else _words)
                for path, read in paths}
    finally:
        delete_endpoint(sagemaker, name)
    _report(ttfb, rate, options)
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttfb-requests", type=int, default=300, help="requests timed to first byte (300)")
    parser.add_argument("--tokens", type=int, default=20000, help="tokens of the long generation (20000)")
    parser.add_argument("--throughput-runs", type=int, default=5, help="long generations per path (5)")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time limit per phase (60)")
    return parser.parse_args()


def _request(tokens: int) -> bytes:
    return json.dumps({"inputs": "bench", "parameters": {"max_new_tokens": tokens}}).encode()


def _direct(pool: urllib3.HTTPConnectionPool):
    """Reads a generation from the container: yields its pieces (the first as soon as it comes)."""

    def read(body: bytes):
        response = pool.urlopen("POST", "/invocations", body=body, preload_content=False,
                                headers={"Content-Type": "application/json"})
        if response.status != 200:
            raise RuntimeError(f"container answered {response.status}")
        yield from response.read_chunked()
        response.release_conn()

    return read


def _streamed(runtime, name: str):
    def read(body: bytes):
        answer = runtime.invoke_endpoint_with_response_stream(
            EndpointName=name, Body=body, ContentType="application/json"
        )
        for event in answer["Body"]:
            yield event["PayloadPart"]["Bytes"]

    return read


def _framed(runtime, name: str):
    def decoded(pieces):
        frames = EventStreamBuffer()
        for data in pieces:
            frames.add_data(data)
            yield from (message.payload for message in frames)

    return _signed_stream(runtime, name, decoded)


def _undecoded(runtime, name: str):
    """The stream's bytes as they come; `_tokens` counts the tokens in the frames' payloads."""
    return _signed_stream(runtime, name, lambda pieces: pieces)


def _signed_stream(runtime, name: str, pieces_of):
    url = f"{runtime.meta.endpoint_url}/endpoints/{name}/invocations-response-stream"
    http = SignedHttp(runtime._request_signer._credentials, "sagemaker", runtime.meta.region_name, 1)

    def read(body: bytes):
        response = http.post(url, body, {"Content-Type": "application/json"}, preload_content=False)
        if response.status != 200:
            raise RuntimeError(f"InvokeEndpointWithResponseStream answered {response.status}")
        yield from pieces_of(response.stream(65536, decode_content=False))
        response.release_conn()

    return read


def _ttfb(read, body: bytes, options) -> list[float]:
    """Seconds to the first piece of each request (each read to its end before the next)."""
    found, deadline = [], time.perf_counter() + options.max_seconds
    while len(found) < options.ttfb_requests and time.perf_counter() < deadline:
        began = time.perf_counter()
        pieces = read(body)
        next(pieces)
        found.append(time.perf_counter() - began)
        for _ in pieces:
            pass
    return found


def _rate(read, body: bytes, options, count) -> float:
    """The best tokens per second of the runs (a token is a word of the text: `count` finds them in
    what `read` yields)."""
    best, deadline = 0.0, time.perf_counter() + options.max_seconds
    for _ in range(options.throughput_runs):
        if time.perf_counter() > deadline:
            break
        began = time.perf_counter()
        received = b"".join(read(body))
        elapsed = time.perf_counter() - began
        best = max(best, count(received) / elapsed)
    return best


def _words(text: bytes) -> int:
    return len(text.split())


def _words_in_frames(stream: bytes) -> int:
    """The words of an event stream's payloads (decoded after the clock stopped)."""
    frames = EventStreamBuffer()
    frames.add_data(stream)
    return _words(b"".join(message.payload for message in frames))


def _report(ttfb: dict, rate: dict, options) -> None:
    print(f"time to first byte over {len(ttfb['boto3'])} requests; tokens/s: best of "
          f"{options.throughput_runs} generations of {options.tokens} tokens")
    print(f"{'path':<10}{'ttfb p50 ms':>13}{'ttfb p99 ms':>13}{'tokens/s':>12}")
    for path in ttfb:
        print(f"{path:<10}{_p(ttfb[path], 50):>13.2f}{_p(ttfb[path], 99):>13.2f}{rate[path]:>12.0f}")
    for path in ("boto3", "frames", "bytes"):
        added = _p(ttfb[path], 50) - _p(ttfb["direct"], 50)
        print(f"ratio {path} / direct: ttfb p50 {_p(ttfb[path], 50) / _p(ttfb['direct'], 50):.2f}x "
              f"(+{added:.2f} ms), p99 {_p(ttfb[path], 99) / _p(ttfb['direct'], 99):.2f}x, "
              f"tokens/s {rate[path] / rate['direct']:.2f}x")


def _p(seconds: list[float], percentile: int) -> float:
    """The percentile in milliseconds."""
    ordered = sorted(seconds)
    return 1000 * ordered[min(len(ordered) - 1, round(percentile / 100 * (len(ordered) - 1)))]


if __name__ == "__main__":
    sys.exit(main())
