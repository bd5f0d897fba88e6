"""This node's checkpoint tier service process (`python -m tier`, the `tier` package): its command
line, the configuration file it re-reads while it runs, starting it, stopping it and freeing the
memory it holds.

The service keeps its checkpoints in a memory-backed directory (SAGEPORT_TIER_MEMORY_DIR,
/dev/shm by default) named after the stack and the node, outside the process: a service restarted
after a crash, or with its worker, finds every checkpoint again, which is what a restarted job
resumes from. Only turning the tier off (or deleting the cluster) frees that memory."""

import hashlib
import hmac
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from clusters.tier_network import network_name
from runtime.child_process import die_with_parent

log = logging.getLogger(__name__)

STOP_TIMEOUT_SECONDS = 15.0
PROJECT_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Peer:
    node: str
    url: str  # its tier service's peer listener, http://<node address>:<tier peer port>


@dataclass(frozen=True)
class ServiceConfig:
    """What the service re-reads while it runs (the budget changes with UpdateCluster)."""

    budget_bytes: int
    grace_seconds: int
    peers: tuple[Peer, ...]  # the cluster's nodes in ring order, this one included

    def as_json(self) -> str:
        peers = [{"node": peer.node, "url": peer.url} for peer in self.peers]
        document = {"budget_bytes": self.budget_bytes, "grace_seconds": self.grace_seconds, "peers": peers}
        return json.dumps(document, indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Listeners:
    containers: str  # address:port where the node's containers reach it (its tier network's gateway)
    peers: str  # address:port where the other nodes' services reach it


def peer_token() -> str:
    """The secret every node's service presents to the others: derived from the platform's S3
    secret, which every node of an installation already shares (and no tenant knows)."""
    secret = settings.SAGEPORT_S3_SECRET_ACCESS_KEY.encode()
    return hmac.new(secret, b"sageport checkpoint tier peers", hashlib.sha256).hexdigest()


# The service's own command; tests put a stand-in process in its place.
SERVICE_COMMAND = (sys.executable, "-m", "tier")


class TierService:
    def __init__(self, node_name: str, command: tuple[str, ...] = SERVICE_COMMAND):
        self.node_name = node_name
        self.command = command
        self.process: subprocess.Popen | None = None
        self.listeners: Listeners | None = None

    @property
    def files_dir(self) -> Path:
        return Path(settings.DATA_DIR) / "tier" / self.node_name

    @property
    def memory_dir(self) -> Path:
        name = f"sageport-tier-{settings.SAGEPORT_STACK_ID}-{self.node_name}"
        return settings.SAGEPORT_TIER_MEMORY_DIR / name

    @property
    def log_path(self) -> Path:
        return self.files_dir / "service.log"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def apply(self, listeners: Listeners, config: ServiceConfig) -> None:
        """Make the running service this one: the configuration rewritten when it changed (the
        service picks it up), the process (re)started when it is not running or must listen
        elsewhere."""
        self._write_files(config)
        if self.running() and listeners == self.listeners:
            return
        if self.process is not None and not self.running():
            ending = _ending(self.process)
            log.warning("node %s: the tier service %s; starting it again", self.node_name, ending)
        self.stop()
        self.process = self._start(listeners)
        self.listeners = listeners

    def stop(self) -> None:
        if self.process is None:
            return
        if self.running():
            self.process.terminate()  # the service finishes what it is answering, then exits
            try:
                self.process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        self.listeners = None

    def retire(self) -> None:
        """The tier is off on this node: stop the service and free the memory its checkpoints hold."""
        self.stop()
        if self.memory_dir.exists():
            shutil.rmtree(self.memory_dir, ignore_errors=True)
            log.info("node %s: the checkpoint tier is off; its memory is freed", self.node_name)

    def _write_files(self, config: ServiceConfig) -> None:
        self.files_dir.mkdir(parents=True, exist_ok=True)
        _write_if_changed(self.files_dir / "config.json", config.as_json())
        _write_if_changed(self.files_dir / "peer-token", peer_token())

    def _start(self, listeners: Listeners) -> subprocess.Popen:
        self.memory_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        command = [
            *_in_engine_namespace(self.command),
            "--listen", listeners.containers,
            "--peer-listen", listeners.peers,
            "--root", str(self.memory_dir),
            "--config", str(self.files_dir / "config.json"),
            "--token-file", str(self.files_dir / "peer-token"),
            "--network", network_name(self.node_name),
            "--node", self.node_name,
        ]
        with open(self.log_path, "ab") as log_file:
            process = subprocess.Popen(
                command, cwd=PROJECT_DIR, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent(os.getpid()),
            )
        # For an operator (or a test) to find it; the agent itself keeps the handle.
        (self.files_dir / "service.pid").write_text(f"{process.pid}\n")
        log.info("node %s: tier service started (pid %d) for containers on %s, peers on %s",
                 self.node_name, process.pid, listeners.containers, listeners.peers)
        return process


def _in_engine_namespace(command: tuple[str, ...]) -> list[str]:
    """The command as run where the node's engine's networks are (SAGEPORT_ENGINE_NETNS): the
    service binds its tier network's gateway, which only exists there. nsenter execs the command
    in place, so its pid, death signal and SIGTERM stay the service's."""
    namespace = settings.SAGEPORT_ENGINE_NETNS
    return ["nsenter", f"--net={namespace}", "--", *command] if namespace else list(command)


def _write_if_changed(path: Path, text: str) -> None:
    """Atomically (the service may read it at any time), and only when different: the service
    reloads on a new modification time."""
    try:
        if path.read_text() == text:
            return
    except FileNotFoundError:
        pass
    temporary = path.with_name(path.name + ".new")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.replace(temporary, path)


def _ending(process: subprocess.Popen) -> str:
    status = process.returncode
    if status is not None and status < 0:
        return f"was killed by signal {-status}"
    return f"exited with status {status}"
