"""What each request does. `LocalApi` answers from this node's store only (the peer listener);
`ClusterApi` is what containers reach: it answers any key, asking the peers when this node does
not hold it (a namespace created on another node, a shard held by its owner or its replica,
`latest` merged across nodes), and answers a write once its copy landed on a live neighbour.

Paths (AWS's `InMemoryCheckpointClient`): `/v1/cp/namespaces/{ns}` (GET, POST with num_ranks &
steps_retained, DELETE), `/v1/cp/checkpoints/{ns}/{rank}/{step}` (POST, GET, DELETE),
`/v1/cp/checkpoints/{ns}/latest?limit=N`, `POST /v1/cp/cluster/reset`, `GET /health`; peers add
`GET /v1/cp/inventory/{ns}`."""

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import parse_qs, unquote

from tier import rules
from tier.errors import TierError, bad_request, gone, not_found
from tier.identity import Caller
from tier.peers import NAMESPACE_HEADER, Peers, checkpoint_path, inventory_steps, namespace_path
from tier.replication import Replicator
from tier.store import CHUNK_BYTES, Namespace, Store

log = logging.getLogger("sageport.tier")

MAX_STEP = 2**63 - 1
DEFAULT_STEPS_RETAINED = 3
DEFAULT_LATEST_LIMIT = 5


@dataclass
class Request:
    method: str
    target: str  # path and query, as received
    headers: Message
    body: object  # .read(n) over exactly `length` bytes
    length: int
    caller: Caller


@dataclass
class Response:
    status: int
    body: bytes | Iterable[bytes] = b""
    length: int | None = None  # for an iterable body
    headers: dict[str, str] = field(default_factory=dict)
    on_close: Callable[[], None] | None = None

    def close(self) -> None:
        if self.on_close:
            self.on_close()


def json_response(document, status: int = 200) -> Response:
    content = json.dumps(document).encode()
    return Response(status, content, headers={"Content-Type": "application/json"})


def error_response(error: TierError) -> Response:
    return Response(error.status, error.body(), headers={"Content-Type": "application/json"})


def shard_response(pieces: Iterator[bytes], size: int, shard_meta: str, close: Callable[[], None]
                   ) -> Response:
    """The client needs Shard-Meta (its checksum) and an exact Content-Length."""
    headers = {"Shard-Meta": shard_meta, "Content-Type": "application/octet-stream"}
    return Response(200, pieces, size, headers, close)


def _number(text: str, what: str) -> int:
    if not text.isdigit() or int(text) > MAX_STEP:
        raise bad_request(f"{what} must be a non-negative integer, not {text[:40]!r}.")
    return int(text)


def _query_int(query: dict, name: str, default: int | None) -> int:
    values = query.get(name)
    if not values:
        if default is None:
            raise bad_request(f"Query parameter {name} is required.")
        return default
    return _number(values[-1], name)


def log_transfer(verb: str, account: str, name: str, rank: int, step: int, size: int, started: float,
                 source: str) -> None:
    seconds = max(time.monotonic() - started, 1e-6)
    log.info("tier %s account=%s namespace=%s rank=%d step=%d bytes=%d seconds=%.3f mib_per_s=%.1f source=%s",
             verb, account, name, rank, step, size, seconds, size / seconds / 2**20, source)


class LocalApi:
    """This node's store, nothing else."""

    source = "peer"  # who wrote or read, in the transfer log

    def __init__(self, store: Store):
        self.store = store

    def handle(self, request: Request) -> Response:
        path, _, query_text = request.target.partition("?")
        parts = [unquote(part) for part in path.split("/")[1:]]
        query = parse_qs(query_text)
        caller = request.caller
        match request.method, parts:
            case "GET", ["health"]:
                return json_response({"status": "healthy"})
            case "GET", ["v1", "cp", "namespaces", name]:
                return self.get_namespace(caller, name)
            case "POST", ["v1", "cp", "namespaces", name]:
                return self.create_namespace(caller, name, _query_int(query, "num_ranks", None),
                                             _query_int(query, "steps_retained", DEFAULT_STEPS_RETAINED))
            case "DELETE", ["v1", "cp", "namespaces", name]:
                return self.delete_namespace(caller, name)
            case "GET", ["v1", "cp", "checkpoints", name, "latest"]:
                return self.latest(caller, name, _query_int(query, "limit", DEFAULT_LATEST_LIMIT))
            case "POST", ["v1", "cp", "checkpoints", name, rank, step]:
                return self.put_shard(request, name, _number(rank, "rank"), _number(step, "step"))
            case "GET", ["v1", "cp", "checkpoints", name, rank, step]:
                return self.get_shard(caller, name, _number(rank, "rank"), _number(step, "step"))
            case "DELETE", ["v1", "cp", "checkpoints", name, rank, step]:
                return self.delete_shard(caller, name, _number(rank, "rank"), _number(step, "step"))
            case "POST", ["v1", "cp", "cluster", "reset"]:
                return self.reset(caller)
            case "GET", ["v1", "cp", "inventory", name]:
                return self.inventory(caller, name)
            case _:
                raise TierError(404, "NotFound", f"No such operation: {request.method} {path[:200]}.")

    # --- namespaces ---

    def get_namespace(self, caller: Caller, name: str) -> Response:
        record = self.find_namespace(caller, name)
        if record is None:
            raise not_found(f"Namespace '{name}' not found.")
        return json_response(record.document())

    def find_namespace(self, caller: Caller, name: str) -> Namespace | None:
        return self.store.namespace(caller.account, name)

    def create_namespace(self, caller: Caller, name: str, num_ranks: int, steps_retained: int) -> Response:
        record, created = self.store.create_namespace(caller.account, name, num_ranks, steps_retained,
                                                      caller.job_arn or "")
        if created:
            log.info("tier namespace created account=%s namespace=%s num_ranks=%d steps_retained=%d job=%s",
                     caller.account, name, num_ranks, steps_retained, caller.job_arn)
        return json_response(record.document(), 201 if created else 200)

    def delete_namespace(self, caller: Caller, name: str) -> Response:
        if not self.store.delete_namespace(caller.account, name):
            raise not_found(f"Namespace '{name}' not found.")
        return json_response({"status": "deleted"})

    def reset(self, caller: Caller) -> Response:
        names = self.store.namespaces_of(caller.account)
        for name in names:
            self.store.delete_namespace(caller.account, name)
        return json_response({"status": "reset", "namespaces": len(names)})

    def inventory(self, caller: Caller, name: str) -> Response:
        record, steps = self.store.namespace(caller.account, name), self.store.inventory(caller.account, name)
        if record is None or steps is None:
            raise not_found(f"Namespace '{name}' not found.")
        return json_response({"namespace": record.document(), "steps": {str(k): v for k, v in steps.items()}})

    def latest(self, caller: Caller, name: str, limit: int) -> Response:
        record, steps = self.store.namespace(caller.account, name), self.store.inventory(caller.account, name)
        if record is None or steps is None:
            raise not_found(f"Namespace '{name}' not found.")
        return json_response(rules.complete_steps(steps, record.num_ranks)[:limit])

    # --- shards ---

    def put_shard(self, request: Request, name: str, rank: int, step: int) -> Response:
        caller = request.caller
        record = self.writable_namespace(request, name)
        started = time.monotonic()
        self.store.put_shard(caller.account, name, rank, step, request.length,
                             request.headers.get("Shard-Meta"), request.body)
        # a peer's copy was used when its writer says, not now: a repair copy of an idle
        # namespace must not keep it from expiring
        used_at = record.last_used if request.headers.get(NAMESPACE_HEADER) else None
        self.store.touch(caller.account, name, caller.job_arn, used_at)
        log_transfer("write", caller.account, name, rank, step, request.length, started, self.source)
        self.accepted(record, rank, step)
        return json_response({"status": "ok"})

    def writable_namespace(self, request: Request, name: str) -> Namespace:
        """A replicated shard brings its namespace's record along."""
        declared = request.headers.get(NAMESPACE_HEADER)
        if declared:
            try:
                record = Namespace.from_document(request.caller.account, json.loads(declared))
            except ValueError as error:
                raise bad_request(f"{NAMESPACE_HEADER} is not a namespace record: {error}") from error
            if record.name != name:
                raise bad_request(f"{NAMESPACE_HEADER} names another namespace.")
            if self.store.adopt_namespace(record) is None:
                raise gone(f"Namespace '{name}' was deleted after this copy of it was made.")
            return record  # the writer's (its last use), though an existing local record wins
        record = self.find_namespace(request.caller, name)
        if record is None:
            raise not_found(f"Namespace '{name}' not found; create it first.")
        return record

    def accepted(self, record: Namespace, rank: int, step: int) -> None:
        """A shard was stored (the cluster API replicates it)."""

    def get_shard(self, caller: Caller, name: str, rank: int, step: int) -> Response:
        opened = self.store.open_shard(caller.account, name, rank, step)
        if opened is None:
            raise not_found(f"Shard {rank} of step {step} of namespace '{name}' not found.")
        shard, handle = opened
        started = time.monotonic()

        def pieces() -> Iterator[bytes]:
            remaining = shard.size
            while remaining:
                piece = handle.read(min(CHUNK_BYTES, remaining))
                if not piece:
                    raise OSError(f"shard file {shard.path} ended early")
                remaining -= len(piece)
                yield piece
            log_transfer("read", caller.account, name, rank, step, shard.size, started, self.source)

        self.store.touch(caller.account, name, caller.job_arn)
        return shard_response(pieces(), shard.size, shard.shard_meta, handle.close)

    def delete_shard(self, caller: Caller, name: str, rank: int, step: int) -> Response:
        if not self.store.delete_shard(caller.account, name, rank, step):
            raise not_found(f"Shard {rank} of step {step} of namespace '{name}' not found.")
        return json_response({"status": "deleted"})


class ClusterApi(LocalApi):
    """What containers reach: any key, from this node or its peers."""

    source = "container"

    def __init__(self, store: Store, peers: Peers, replicator: Replicator, replica_wait_seconds: float):
        super().__init__(store)
        self.peers = peers
        self.replicator = replicator
        self.replica_wait_seconds = replica_wait_seconds

    def find_namespace(self, caller: Caller, name: str) -> Namespace | None:
        record = self.store.namespace(caller.account, name)
        if record is None:
            found = self.peers.find_namespace(caller.account, name)
            record = self.store.adopt_namespace(found) if found else None
        if record is not None:
            self.store.touch(caller.account, name, caller.job_arn)
        return record

    def writable_namespace(self, request: Request, name: str) -> Namespace:
        if request.headers.get(NAMESPACE_HEADER):
            raise bad_request(f"{NAMESPACE_HEADER} is for peers.")
        return super().writable_namespace(request, name)

    def accepted(self, record: Namespace, rank: int, step: int) -> None:
        """The write is answered once its copy landed on a live neighbour, so a node lost after
        the answer loses no step; a copy that did not land in time is left to the repair sweep."""
        copy = self.replicator.submit(record, rank, step)
        landed = copy is not None and copy.wait(self.replica_wait_seconds)
        if not landed and self.peers.has_neighbours():
            log.warning("tier write answered with one copy account=%s namespace=%s rank=%d step=%d "
                        "(no live neighbour took it within %.0fs; the repair sweep copies it)",
                        record.account, record.name, rank, step, self.replica_wait_seconds)

    def delete_namespace(self, caller: Caller, name: str) -> Response:
        here = self.store.delete_namespace(caller.account, name)
        elsewhere = self.peers.delete_everywhere(caller.account, "DELETE", namespace_path(name))
        if not (here or elsewhere):
            raise not_found(f"Namespace '{name}' not found.")
        return json_response({"status": "deleted"})

    def reset(self, caller: Caller) -> Response:
        response = super().reset(caller)
        self.peers.delete_everywhere(caller.account, "POST", "/v1/cp/cluster/reset")
        return response

    def latest(self, caller: Caller, name: str, limit: int) -> Response:
        """Steps complete across the cluster: a multi-node job's ranks write to their own nodes."""
        record = self.store.namespace(caller.account, name)
        inventories = [self.store.inventory(caller.account, name) or {}]
        for answer in self.peers.inventories(caller.account, name):
            try:
                held = Namespace.from_document(caller.account, answer["namespace"])
                if self.store.deleted_since_created(held):
                    continue  # a node that was down during the delete still holds it
                record = record or held
                inventories.append(inventory_steps(answer))
            except (KeyError, TypeError, ValueError, AttributeError, TierError) as error:
                log.warning("tier: a peer's inventory of %s is unreadable: %s", name, error)
        if record is None:
            raise not_found(f"Namespace '{name}' not found.")
        self.store.touch(caller.account, name, caller.job_arn)
        merged = rules.merge(inventories)
        return json_response(rules.complete_steps(merged, record.num_ranks)[:limit])

    def get_shard(self, caller: Caller, name: str, rank: int, step: int) -> Response:
        try:
            return super().get_shard(caller, name, rank, step)
        except TierError as error:
            if error.status != 404:
                raise
        if self.find_namespace(caller, name) is None:  # deleted: a stale copy elsewhere is not it
            raise not_found(f"Namespace '{name}' not found.")
        remote = self.peers.open_shard(caller.account, name, rank, step)
        if remote is None:
            raise not_found(f"Shard {rank} of step {step} of namespace '{name}' not found.")
        started = time.monotonic()

        def pieces() -> Iterator[bytes]:
            yield from remote.pieces()
            source = f"peer:{remote.node}"
            log_transfer("read", caller.account, name, rank, step, remote.size, started, source)

        return shard_response(pieces(), remote.size, remote.shard_meta, remote.close)

    def delete_shard(self, caller: Caller, name: str, rank: int, step: int) -> Response:
        here = self.store.delete_shard(caller.account, name, rank, step)
        elsewhere = self.peers.delete_everywhere(caller.account, "DELETE", checkpoint_path(name, rank, step))
        if not (here or elsewhere):
            raise not_found(f"Shard {rank} of step {step} of namespace '{name}' not found.")
        return json_response({"status": "deleted"})
