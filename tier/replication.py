"""Copying the shards containers write to this node onto a live neighbour before the write is
answered (the cluster API waits for the copy, bounded: api.py), by worker threads fed from a
bounded queue. A copy goes to the first node after this one in the ring that is not down
(`Peers.replica_target`); a neighbour that fails mid-copy is marked down and the next live one
is tried at once. A copy that still did not land (every neighbour down or refusing, or the queue
full) is not kept here: the repair sweep (repair.py) finds every shard held on this node alone
and copies it again, so nothing a failed copy owed is forgotten and memory stays bounded (the
queue's 256 entries)."""

import logging
import queue
import threading
import time
from dataclasses import dataclass, field

from tier.peers import NamespaceDeleted, Peers, PeerUnavailable
from tier.store import Namespace, Store

log = logging.getLogger("sageport.tier")

QUEUE_LENGTH = 256
WORKERS = 8  # copies of the ranks writing at once, each awaited by its write

Key = tuple[str, str, int, int]  # account, namespace, rank, step


@dataclass
class Copy:
    record: Namespace
    rank: int
    step: int
    landed: bool = False
    finished: threading.Event = field(default_factory=threading.Event)

    @property
    def key(self) -> Key:
        return self.record.account, self.record.name, self.rank, self.step

    def wait(self, seconds: float) -> bool:
        """Whether the copy landed on a neighbour within `seconds`."""
        return self.finished.wait(seconds) and self.landed


class Replicator:
    def __init__(self, store: Store, peers: Peers):
        self._store = store
        self._peers = peers
        self._queue: queue.Queue[Copy | None] = queue.Queue(QUEUE_LENGTH)
        self._pending: set[Key] = set()  # queued or being copied: the repair sweep leaves them be
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._work, name=f"tier-replicate-{n}", daemon=True)
                         for n in range(WORKERS)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def submit(self, record: Namespace, rank: int, step: int) -> Copy | None:
        """The queued copy, or None when there is no live neighbour or the queue is full (the
        repair sweep copies it once one takes it)."""
        if self._peers.replica_target() is None:
            return None
        copy = Copy(record, rank, step)
        with self._lock:
            self._pending.add(copy.key)
        try:
            self._queue.put_nowait(copy)
        except queue.Full:
            self._done(copy)
            log.warning("tier replicate deferred account=%s namespace=%s rank=%d step=%d reason=queue-full",
                        record.account, record.name, rank, step)
            return None
        return copy

    def pending(self, key: Key) -> bool:
        with self._lock:
            return key in self._pending

    def copy(self, record: Namespace, rank: int, step: int) -> bool:
        """Copy one shard held here to the first live neighbour that takes it; whether one did
        (False also when the shard is gone here: evicted, superseded or deleted)."""
        for _ in range(len(self._peers.others()) or 1):
            target = self._peers.replica_target()
            if target is None:
                return False
            opened = self._store.open_shard(record.account, record.name, rank, step)
            if opened is None:
                return False
            shard, handle = opened
            current = self._store.namespace(record.account, record.name) or record
            started = time.monotonic()
            try:
                with handle:
                    self._peers.replicate(target, current, rank, step, shard, handle)
            except NamespaceDeleted as error:  # deleted while this node was away: so here too
                log.info("tier dropping deleted account=%s namespace=%s: %s",
                         record.account, record.name, error)
                self._store.delete_namespace(record.account, record.name)
                return False
            except PeerUnavailable as error:  # marked down: the next live neighbour is tried
                log.warning("tier replicate failed account=%s namespace=%s rank=%d step=%d peer=%s: %s",
                            record.account, record.name, rank, step, target.node, error)
                continue
            except OSError as error:  # it answered but refused (full): the sweep tries again later
                log.warning("tier replicate refused account=%s namespace=%s rank=%d step=%d peer=%s: %s",
                            record.account, record.name, rank, step, target.node, error)
                return False
            log.info("tier replicate account=%s namespace=%s rank=%d step=%d bytes=%d peer=%s seconds=%.3f",
                     record.account, record.name, rank, step, shard.size, target.node,
                     time.monotonic() - started)
            return True
        return False

    def stop(self, timeout: float) -> None:
        """Finish what is queued, within `timeout` seconds."""
        for _ in self._threads:
            try:
                self._queue.put(None, timeout=timeout)
            except queue.Full:
                break
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        while (copy := self._queue.get()) is not None:
            try:
                copy.landed = self.copy(copy.record, copy.rank, copy.step)
            except Exception:  # a worker must outlive any one copy
                log.exception("tier replicate failed namespace=%s rank=%d step=%d", copy.record.name,
                              copy.rank, copy.step)
            finally:
                self._done(copy)

    def _done(self, copy: Copy) -> None:
        with self._lock:
            self._pending.discard(copy.key)
        copy.finished.set()
