"""Overlay encryption's cost: a job's overlay network created encrypted (`SAGEPORT_OVERLAY_ENCRYPTED`,
what `docker network create --opt encrypted` does) against a plain one, in one run.

Two Docker engines in network namespaces of their own on one private network, a swarm of them
(tests/e2e/engines.py, as tests/e2e/test_overlay_across_engines.py builds it: the first a
manager, the second a worker), and two attachable overlay networks made by Sageport's own
runtime seam (`DockerRuntime.ensure_network`, the setting off, then on), on fixed subnets. On
each network a server container on the manager's engine (`sageport-examples/python`: a sink
that counts what it receives, and an echo), and for each measurement a client container on the
worker's engine, so every byte crosses between the engines in VXLAN (ESP-wrapped when
encrypted), as between hosts:
- throughput: --mib MiB sent over one TCP connection, timed until the server acknowledged the
  count (MiB/s);
- latency: --pings round trips of one byte (TCP_NODELAY) on one connection, p50 and p99 in ms.
Each round runs the plain network's client, then the encrypted one's; the medians of the rounds
and the encrypted/plain ratios are printed, then one summary line. A client that reaches nothing
within --connect-seconds reports so: IPsec ESP needs the kernel's ESP transform
(CONFIG_INET_ESP, printed from /proc/config.gz when the kernel exposes it), without which the
engines' security associations cannot be installed and no packet crosses an encrypted overlay.
Bounded: at most --repeat rounds, none starts after --max-seconds, every client container is
waited for at most --connect-seconds and two minutes. Everything is removed at the end: the
engines are cleared and stopped, their swarm and network state forgotten, the namespaces deleted.

    make bench-overlay [ARGS='--mib 256 --pings 1000 --repeat 3']

or `.venv/bin/python -m bench.overlay` from the repository root, as root (network namespaces and
more engines; the machine's own engine is only asked for the image, built first when missing).
No Sageport stack is needed.
"""

import argparse
import gzip
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PLAIN = "plain"
ENCRYPTED = "encrypted"
SUBNETS = {PLAIN: "10.213.250.0/24", ENCRYPTED: "10.213.251.0/24"}
SERVER_ADDRESS_SUFFIX = 10  # the server's fixed address on each network: <subnet>.10
SINK_PORT, ECHO_PORT = 7000, 7001
CLIENT_SLACK_SECONDS = 120.0  # a client container's start and transfer, past its connect bound
LABELS = {"sageport.resource": "arn:aws:sagemaker:us-east-1:123456789012:training-job/overlay-bench"}
BUILD_IMAGES = Path(__file__).resolve().parent.parent / "scripts" / "build-images.sh"

# The server: a sink on SINK_PORT answering the byte count once the sender is done, an echo on
# ECHO_PORT; a thread per connection.
SERVER = f"""
import socket, threading
def sink(conn):
    total = 0
    while chunk := conn.recv(1 << 20):
        total += len(chunk)
    conn.sendall(str(total).encode())
    conn.close()
def echo(conn):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while data := conn.recv(64):
        conn.sendall(data)
    conn.close()
def serve(port, handle):
    listener = socket.create_server(("", port), reuse_port=True)
    while True:
        threading.Thread(target=handle, args=(listener.accept()[0],), daemon=True).start()
threading.Thread(target=serve, args=({ECHO_PORT}, echo), daemon=True).start()
serve({SINK_PORT}, sink)
"""

# The client: argv host, MiB, pings, connect seconds; prints one JSON line (an "error" when the
# server could not be reached or the transfer broke).
CLIENT = f"""
import json, socket, statistics, sys, time
host, mib, pings, connect_seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
def connect(port):
    deadline = time.monotonic() + connect_seconds
    while True:  # the server may still be starting, the overlay's peers still being learnt
        try:
            return socket.create_connection((host, port), timeout=2)
        except OSError:
            if time.monotonic() > deadline:
                raise
try:
    chunk = bytes(1 << 20)
    sending = connect({SINK_PORT})
    sending.settimeout(30)
    began = time.perf_counter()
    for _ in range(mib):
        sending.sendall(chunk)
    sending.shutdown(socket.SHUT_WR)
    received = int(sending.recv(64))
    seconds = time.perf_counter() - began
    assert received == mib << 20, received
    pinging = connect({ECHO_PORT})
    pinging.settimeout(10)
    pinging.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    trips = []
    for _ in range(pings):
        began = time.perf_counter()
        pinging.sendall(b"x")
        assert pinging.recv(1) == b"x"
        trips.append(time.perf_counter() - began)
    cuts = statistics.quantiles(trips, n=100)
    result = {{"mib_per_second": mib / seconds, "p50_ms": cuts[49] * 1000, "p99_ms": cuts[98] * 1000}}
    print(json.dumps(result))
except Exception as error:
    print(json.dumps({{"error": f"{{type(error).__name__}}: {{error}}"}}))
"""


def main() -> int:
    if not __package__:
        sys.exit("run it from the repository root as: .venv/bin/python -m bench.overlay")
    options = _arguments()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    import django
    django.setup()  # the runtime seam reads SAGEPORT_OVERLAY_ENCRYPTED from the settings
    import pytest

    from tests.e2e import engines
    try:
        engines.require_namespaces()
    except pytest.skip.Exception as why:
        sys.exit(str(why))
    image = _example_image("python")
    print(f"kernel {os.uname().release}: CONFIG_INET_ESP {kernel_esp()}", flush=True)
    rounds: list[dict[str, dict]] = []
    with engines.wire(2) as network, engines.engines_on(network, (image,)) as (manager, worker):
        engines.swarm([manager, worker], managers=1)
        bench = OverlayBench(manager, worker, image, options)
        for variant in (PLAIN, ENCRYPTED):
            bench.make_network(variant)
        deadline = time.monotonic() + options.max_seconds
        for number in range(1, options.repeat + 1):
            if number > 1 and time.monotonic() > deadline:
                break
            rounds.append({variant: bench.measure(variant, number) for variant in (PLAIN, ENCRYPTED)})
            print(f"round {number}: " + "; ".join(f"{variant} {describe(result)}"
                                                  for variant, result in rounds[-1].items()), flush=True)
    print(report(rounds, options))
    return 0


class OverlayBench:
    """The two engines through Sageport's runtime seam, a network and a server per variant."""

    def __init__(self, manager, worker, image: str, options: argparse.Namespace):
        from runtime.docker import DockerRuntime

        self.manager_engine = manager
        self.manager, self.worker = DockerRuntime(client=manager.client), DockerRuntime(client=worker.client)
        self.image, self.options = image, options

    def make_network(self, variant: str) -> None:
        """The variant's overlay as a spanning job's node makes it (the manager creates, the worker
        joins by name), its server started on the manager's engine."""
        from django.conf import settings

        from runtime.base import ContainerSpec

        settings.SAGEPORT_OVERLAY_ENCRYPTED = variant == ENCRYPTED
        name = _network_name(variant)
        subnet = self.manager.ensure_network(name, LABELS, subnets=[SUBNETS[variant]], overlay=True)
        self.worker.ensure_network(name, LABELS, subnets=[subnet], overlay=True)
        options = self.manager_engine.client.networks.get(name).attrs.get("Options") or {}
        assert ("encrypted" in options) == (variant == ENCRYPTED), options
        self.manager.run(ContainerSpec(
            name=f"{name}-server", image=self.image, labels=LABELS, entrypoint=["python3", "-c"],
            command=[SERVER], network=name, ipv4_address=_server_address(variant),
        ))

    def measure(self, variant: str, number: int) -> dict:
        """One client run on the worker's engine: its JSON line (an "error" when it failed)."""
        from runtime.base import ContainerSpec
        from tests.e2e.hosting import wait_until

        name = f"{_network_name(variant)}-client-{number}"
        self.worker.run(ContainerSpec(
            name=name, image=self.image, labels=LABELS, entrypoint=["python3", "-c"],
            command=[CLIENT, _server_address(variant), str(self.options.mib), str(self.options.pings),
                     str(self.options.connect_seconds)],
            network=_network_name(variant),
        ))
        try:
            bound = self.options.connect_seconds + CLIENT_SLACK_SECONDS
            wait_until(lambda: _exited(self.worker, name), timeout=bound, what=f"the {variant} client to end")
            lines = [line.message for line in self.worker.logs(name)]
        finally:
            self.worker.remove(name)
        try:
            return json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError):
            return {"error": f"no result: {lines[-3:]}"}


def _exited(runtime, name: str) -> bool:
    container = runtime.client.containers.get(name)
    return container.status == "exited"


def _network_name(variant: str) -> str:
    return f"sageport-overlay-bench-{variant}"


def _server_address(variant: str) -> str:
    return SUBNETS[variant].rsplit(".", 1)[0] + f".{SERVER_ADDRESS_SUFFIX}"


def _example_image(name: str) -> str:
    """The example image's tag, built by scripts/build-images.sh when the host engine lacks it."""
    built = subprocess.run([str(BUILD_IMAGES), name], check=True, stdout=subprocess.PIPE, text=True,
                           timeout=1800)
    return built.stdout.strip().splitlines()[-1]


def kernel_esp() -> str:
    """CONFIG_INET_ESP of the running kernel: "y", "m", "not set", or "unknown" when the kernel
    does not expose its configuration."""
    try:
        config = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
    except OSError:
        return "unknown"
    for line in config.splitlines():
        if line.startswith("CONFIG_INET_ESP="):
            return line.split("=", 1)[1]
    return "not set"


def describe(result: dict) -> str:
    if "error" in result:
        return f"failed ({result['error']})"
    return (f"{result['mib_per_second']:.0f} MiB/s, "
            f"p50 {result['p50_ms']:.3f} ms, p99 {result['p99_ms']:.3f} ms")


def report(rounds: list[dict[str, dict]], options: argparse.Namespace) -> str:
    """The medians per variant (of the rounds that passed traffic) and encrypted over plain."""
    medians = {variant: _medians([r[variant] for r in rounds]) for variant in (PLAIN, ENCRYPTED)}
    lines = [f"\n{len(rounds)} rounds, {options.mib} MiB and {options.pings} round trips each:"]
    for variant, median in medians.items():
        lines.append(f"  {variant:9} {describe(median)}")
    plain, encrypted = medians[PLAIN], medians[ENCRYPTED]
    if "error" in plain or "error" in encrypted:
        failed = ENCRYPTED if "error" in encrypted else PLAIN
        lines.append(f"summary: no ratio: the {failed} overlay passed no traffic "
                     f"({medians[failed]['error']}); kernel CONFIG_INET_ESP {kernel_esp()}")
    else:
        lines.append(
            f"summary: encrypted/plain throughput {_over(encrypted, plain, 'mib_per_second'):.2f}x, "
            f"p50 {_over(encrypted, plain, 'p50_ms'):.2f}x, p99 {_over(encrypted, plain, 'p99_ms'):.2f}x"
        )
    return "\n".join(lines)


def _medians(results: list[dict]) -> dict:
    passed = [result for result in results if "error" not in result]
    if not passed:
        return {"error": results[-1]["error"] if results else "no round ran"}
    return {key: statistics.median(result[key] for result in passed)
            for key in ("mib_per_second", "p50_ms", "p99_ms")}


def _over(result: dict, floor: dict, key: str) -> float:
    return result[key] / floor[key] if floor[key] else math.nan


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="MiB sent per throughput run (default 256)")
    parser.add_argument("--pings", type=int, default=1000, help="round trips per latency run (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--max-seconds", type=float, default=120.0,
                        help="no round starts after this many seconds (default 120)")
    parser.add_argument("--connect-seconds", type=float, default=15.0,
                        help="how long a client tries to reach its server; its container may run "
                             f"{CLIENT_SLACK_SECONDS:.0f} s more (default 15)")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
