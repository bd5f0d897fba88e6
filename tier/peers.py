"""Talking to the other nodes' tier services, on their peer listeners. Every request carries the
installation's token and the account it is for; the peer answers from its own store only, so a
lookup never loops. A peer that does not answer is taken for down and skipped for DOWN_SECONDS
(then probed again by the next request that would reach it), and every socket has a short
connect timeout, so a dead node never makes a container's request hang. Liveness is known only
this way: membership is the config's ring, and a node is live while it answers."""

import http.client
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import quote

from tier.config import NodeConfig, Peer
from tier.errors import TierError
from tier.store import CHUNK_BYTES, Namespace, Shard

log = logging.getLogger("sageport.tier")

TOKEN_HEADER = "X-Sageport-Tier-Token"
ACCOUNT_HEADER = "X-Sageport-Tier-Account"
JOB_HEADER = "X-Sageport-Tier-Job"
NAMESPACE_HEADER = "X-Sageport-Tier-Namespace"  # a replicated shard's namespace record (JSON)
DOWN_SECONDS = 15.0


class PeerUnavailable(Exception):
    pass


class NamespaceDeleted(Exception):
    """A peer refused a copy: a client deleted the namespace after the copy's record was made
    (this node was down during the delete, so it still held the namespace)."""


@dataclass
class RemoteShard:
    """A shard a peer is sending: stream `pieces()`, then (or on any failure) `close()`."""

    size: int
    shard_meta: str
    node: str
    _connection: http.client.HTTPConnection
    _response: http.client.HTTPResponse

    def pieces(self) -> Iterator[bytes]:
        remaining = self.size
        while remaining:
            piece = self._response.read(min(CHUNK_BYTES, remaining))
            if not piece:
                raise OSError(f"peer {self.node} ended the shard early")
            remaining -= len(piece)
            yield piece

    def close(self) -> None:
        self._connection.close()


def checkpoint_path(name: str, rank: int, step: int) -> str:
    return f"/v1/cp/checkpoints/{quote(name, safe='')}/{rank}/{step}"


def namespace_path(name: str) -> str:
    return f"/v1/cp/namespaces/{quote(name, safe='')}"


def inventory_path(name: str) -> str:
    return f"/v1/cp/inventory/{quote(name, safe='')}"


def inventory_steps(answer: dict) -> dict[int, list[int]]:
    """The `steps` of a peer's inventory answer (KeyError, TypeError, ValueError or
    AttributeError when it is malformed)."""
    return {int(step): [int(rank) for rank in ranks] for step, ranks in answer["steps"].items()}


class Peers:
    def __init__(self, node: str, config: Callable[[], NodeConfig], token: str, connect_timeout: float = 2.0,
                 io_timeout: float = 10.0, clock=time.monotonic):
        self.node = node
        self._config = config
        self._token = token
        self._connect_timeout = connect_timeout
        self._io_timeout = io_timeout
        self._clock = clock
        self._down_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def others(self) -> list[Peer]:
        """The other nodes, ring order after this one, leaving out those that just failed."""
        now = self._clock()
        with self._lock:
            return [peer for peer in self._config().ring_after(self.node)
                    if self._down_until.get(peer.node, 0.0) <= now]

    def has_neighbours(self) -> bool:
        """Whether the ring has other nodes for this one's copies (down or not)."""
        config = self._config()
        return config.includes(self.node) and bool(config.ring_after(self.node))

    def replica_target(self) -> Peer | None:
        """Where this node copies shards now: the first node after it in the ring that is not
        down, so a dead successor is skipped and the replica set follows the ring's membership.
        None when this node is alone, outside the ring, or every other node is down."""
        if not self._config().includes(self.node):
            return None
        live = self.others()
        return live[0] if live else None

    # --- lookups (first answer wins) ---

    def find_namespace(self, account: str, name: str) -> Namespace | None:
        for peer in self.others():
            document = self._get_json(peer, namespace_path(name), account)
            if document is not None:
                try:
                    return Namespace.from_document(account, document)
                except (ValueError, TierError) as error:  # a peer's bad record is that peer's problem
                    log.warning("tier: peer %s sent a bad namespace record: %s", peer.node, error)
        return None

    def inventories(self, account: str, name: str) -> list[dict]:
        """Every answering peer's `{"namespace": record, "steps": {step: [ranks]}}`."""
        found = []
        for peer in self.others():
            document = self._get_json(peer, inventory_path(name), account)
            if document is not None:
                found.append(document)
        return found

    def open_shard(self, account: str, name: str, rank: int, step: int) -> RemoteShard | None:
        for peer in self.others():
            try:
                connection, response = self._request(peer, "GET", checkpoint_path(name, rank, step), account)
            except PeerUnavailable:
                continue
            length, shard_meta = response.getheader("Content-Length"), response.getheader("Shard-Meta")
            if response.status == 200 and length and length.isdigit() and shard_meta:
                return RemoteShard(int(length), shard_meta, peer.node, connection, response)
            _finish(connection, response)
        return None

    def delete_everywhere(self, account: str, method: str, path: str) -> bool:
        """Apply a deletion on every reachable peer; whether any of them had the thing."""
        deleted = False
        for peer in self.others():
            try:
                connection, response = self._request(peer, method, path, account)
            except PeerUnavailable:
                continue
            deleted |= 200 <= response.status < 300
            _finish(connection, response)
        return deleted

    # --- replication ---

    def replicate(self, peer: Peer, record: Namespace, rank: int, step: int, shard: Shard, handle) -> None:
        """Send one shard to `peer` (PeerUnavailable, or OSError, when it did not take it)."""
        headers = {"Shard-Meta": shard.shard_meta, NAMESPACE_HEADER: json.dumps(record.document()),
                   "Content-Length": str(shard.size), JOB_HEADER: record.owner_job_arn}
        connection, response = self._request(peer, "POST", checkpoint_path(record.name, rank, step),
                                             record.account, headers, handle)
        answer = _finish(connection, response)
        if response.status == 410:
            raise NamespaceDeleted(f"peer {peer.node}: {record.name!r} was deleted after this copy was made")
        if response.status != 200:
            raise OSError(f"peer {peer.node} answered {response.status}: {answer[:300]!r}")

    # --- inside ---

    def _get_json(self, peer: Peer, path: str, account: str) -> dict | None:
        try:
            connection, response = self._request(peer, "GET", path, account)
        except PeerUnavailable:
            return None
        try:
            if response.status != 200:
                return None
            document = json.loads(response.read(1024 * 1024))
            return document if isinstance(document, dict) else None
        except (OSError, ValueError, http.client.HTTPException) as error:
            log.warning("tier: peer %s: %s %s", peer.node, path, error)
            return None
        finally:
            connection.close()

    def _request(self, peer: Peer, method: str, path: str, account: str, headers: dict | None = None,
                 body=None) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        connection = http.client.HTTPConnection(peer.host, peer.port, timeout=self._connect_timeout)
        try:
            connection.connect()
            connection.sock.settimeout(self._io_timeout)
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection.putrequest(method, path, skip_accept_encoding=True)
            sent = {TOKEN_HEADER: self._token, ACCOUNT_HEADER: account, "Content-Length": "0"}
            sent.update(headers or {})
            for name, value in sent.items():
                connection.putheader(name, value)
            connection.endheaders()
            if body is not None:
                _send_file(connection, body, int(sent["Content-Length"]))
            return connection, connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            self._mark_down(peer, error)
            raise PeerUnavailable(f"{peer.node}: {error}") from error

    def _mark_down(self, peer: Peer, error: Exception) -> None:
        log.warning("tier: peer %s (%s:%d) did not answer, skipped for %.0fs: %s", peer.node, peer.host,
                    peer.port, DOWN_SECONDS, error)
        with self._lock:
            self._down_until[peer.node] = self._clock() + DOWN_SECONDS


def _finish(connection: http.client.HTTPConnection, response: http.client.HTTPResponse) -> bytes:
    """Read a short answer to its end before closing (closing over unread bytes resets the
    connection, which the peer would log as an error)."""
    try:
        return response.read(64 * 1024)
    except (OSError, http.client.HTTPException):
        return b""
    finally:
        connection.close()


def _send_file(connection: http.client.HTTPConnection, handle, size: int) -> None:
    remaining = size
    while remaining:
        piece = handle.read(min(CHUNK_BYTES, remaining))
        if not piece:
            raise OSError("the shard file ended early")
        connection.sock.sendall(piece)
        remaining -= len(piece)


