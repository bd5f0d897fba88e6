"""The node's configuration file, which the node agent rewrites atomically (temp + rename):
`{"budget_bytes": int, "grace_seconds": int, "peers": [{"node": "a", "url": "http://h:p"}, ...]}`.
`peers` is the cluster's tier nodes in ring order, this node included. The file is re-read when
its mtime changes, checked at most once a second; a file that does not parse keeps the last good
configuration (and is logged)."""

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

log = logging.getLogger("sageport.tier")

RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class Peer:
    node: str
    host: str
    port: int


@dataclass(frozen=True)
class NodeConfig:
    budget_bytes: int
    grace_seconds: int
    peers: tuple[Peer, ...]

    def ring_after(self, node: str) -> list[Peer]:
        """The other nodes in ring order starting after `node` (all of them when it is not in
        the ring)."""
        names = [peer.node for peer in self.peers]
        if node not in names:
            return list(self.peers)
        start = names.index(node) + 1
        return [peer for peer in self.peers[start:] + self.peers[:start] if peer.node != node]

    def includes(self, node: str) -> bool:
        """Whether `node` is in the ring (a node outside it replicates nowhere)."""
        return any(peer.node == node for peer in self.peers)


def parse(text: str) -> NodeConfig:
    """ValueError when the document is not a valid configuration."""
    document = json.loads(text)
    if not isinstance(document, dict):
        raise ValueError("the configuration is not a JSON object")
    budget, grace = document.get("budget_bytes"), document.get("grace_seconds")
    for name, value in (("budget_bytes", budget), ("grace_seconds", grace)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer")
    peers = document.get("peers", [])
    if not isinstance(peers, list):
        raise ValueError("peers must be a list")
    return NodeConfig(budget, grace, tuple(_peer(entry) for entry in peers))


def _peer(entry) -> Peer:
    if not isinstance(entry, dict) or not isinstance(entry.get("node"), str) or not entry["node"]:
        raise ValueError("each peer needs a node name")
    url = urlsplit(str(entry.get("url", "")))
    if url.scheme != "http" or not url.hostname or url.port is None:
        raise ValueError(f"peer {entry['node']}: url must be http://host:port")
    return Peer(entry["node"], url.hostname, url.port)


class ConfigFile:
    """The current configuration of a file, reloaded when it changes."""

    def __init__(self, path: str, clock=time.monotonic):
        self._path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._mtime = os.stat(path).st_mtime_ns
        with open(path) as handle:
            self._config = parse(handle.read())  # the first one must be valid: fail fast
        self._checked = clock()

    def current(self) -> NodeConfig:
        with self._lock:
            if self._clock() - self._checked >= RECHECK_SECONDS:
                self._checked = self._clock()
                self._reload_if_changed()
            return self._config

    def _reload_if_changed(self) -> None:
        try:
            mtime = os.stat(self._path).st_mtime_ns
            if mtime == self._mtime:
                return
            self._mtime = mtime  # a broken file is reported once, not every second
            with open(self._path) as handle:
                self._config = parse(handle.read())
            log.info("tier configuration reloaded: budget_bytes=%d grace_seconds=%d peers=%s",
                     self._config.budget_bytes, self._config.grace_seconds,
                     ",".join(peer.node for peer in self._config.peers))
        except (OSError, ValueError) as error:
            log.warning("tier configuration %s not reloaded, keeping the last one: %s", self._path, error)
