"""`python -m tier` as the node agent runs it: it serves, and SIGTERM lets the request in flight
finish before it exits 0."""

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from devstack.stack import PROJECT_DIR
from tier.peers import ACCOUNT_HEADER, NAMESPACE_HEADER, TOKEN_HEADER

from .conftest import ACCOUNT, JOB, TOKEN, free_port, wait_for
from .test_http import shard_meta


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return json.loads(response.read()) == {"status": "healthy"}
    except OSError:
        return False


def start_tier(tmp_path, port: int, peer_port: int) -> tuple[subprocess.Popen, list[bytes]]:
    (tmp_path / "token").write_text(TOKEN)
    config = {"budget_bytes": 10**6, "grace_seconds": 60, "peers": []}
    (tmp_path / "config.json").write_text(json.dumps(config))
    command = [sys.executable, "-m", "tier", "--listen", f"127.0.0.1:{port}",
               "--peer-listen", f"127.0.0.1:{peer_port}", "--root", str(tmp_path / "root"),
               "--config", str(tmp_path / "config.json"), "--token-file", str(tmp_path / "token"),
               "--network", "sageport-tier-test-unused", "--node", "a"]
    process = subprocess.Popen(command, cwd=PROJECT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output: list[bytes] = []
    threading.Thread(target=lambda: output.extend(process.stdout), daemon=True).start()
    return process, output


def test_sigterm_finishes_the_write_in_flight_then_exits_zero(tmp_path):
    port, peer_port = free_port(), free_port()
    process, output = start_tier(tmp_path, port, peer_port)
    root = tmp_path / "root"
    try:
        wait_for(lambda: healthy(port))
        record = {"namespace": "ns", "num_ranks": 1, "steps_retained": 3, "owner_job_arn": JOB,
                  "created": 1.0, "last_used": time.time()}
        body = b"0123456789"
        head = (f"POST /v1/cp/checkpoints/ns/0/5 HTTP/1.1\r\nHost: a\r\nContent-Length: {len(body)}\r\n"
                f"Shard-Meta: {shard_meta(body)}\r\n{TOKEN_HEADER}: {TOKEN}\r\n"
                f"{ACCOUNT_HEADER}: {ACCOUNT}\r\n{NAMESPACE_HEADER}: {json.dumps(record)}\r\n\r\n")
        with socket.create_connection(("127.0.0.1", peer_port), timeout=30) as raw:
            raw.sendall(head.encode() + body[:5])
            wait_for(lambda: any((root / "tmp").iterdir()))  # the body is streaming in
            process.send_signal(signal.SIGTERM)
            wait_for(lambda: any(b"stopping" in line for line in output))
            raw.sendall(body[5:])
            answer = raw.makefile("rb").readline()
        assert answer.startswith(b"HTTP/1.1 200")
        assert process.wait(timeout=60) == 0
        assert not healthy(port)
        [shard] = root.glob("accounts/*/*/steps/5/0.shard")
        assert shard.read_bytes().endswith(body)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
