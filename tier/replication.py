"""Copying the shards containers write to this node onto the next node of the ring, after the
container's write was acknowledged: a bounded queue and worker threads, so a slow or dead
neighbour never delays a write. A full queue drops the copy (logged): the shard is still here,
and the next step's shards are queued again."""

import logging
import queue
import threading
import time
from dataclasses import dataclass

from tier.peers import Peers, PeerUnavailable
from tier.store import Namespace, Store

log = logging.getLogger("sageport.tier")

QUEUE_LENGTH = 256
WORKERS = 2


@dataclass(frozen=True)
class _Copy:
    record: Namespace
    rank: int
    step: int


class Replicator:
    def __init__(self, store: Store, peers: Peers):
        self._store = store
        self._peers = peers
        self._queue: queue.Queue[_Copy | None] = queue.Queue(QUEUE_LENGTH)
        self._threads = [threading.Thread(target=self._work, name=f"tier-replicate-{n}", daemon=True)
                         for n in range(WORKERS)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def submit(self, record: Namespace, rank: int, step: int) -> None:
        if self._peers.replica_target() is None:
            return
        try:
            self._queue.put_nowait(_Copy(record, rank, step))
        except queue.Full:
            log.warning("tier replicate dropped account=%s namespace=%s rank=%d step=%d reason=queue-full",
                        record.account, record.name, rank, step)

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
                self._copy(copy)
            except Exception:  # a worker must outlive any one copy
                log.exception("tier replicate failed namespace=%s rank=%d step=%d", copy.record.name,
                              copy.rank, copy.step)

    def _copy(self, copy: _Copy) -> None:
        target = self._peers.replica_target()
        opened = self._store.open_shard(copy.record.account, copy.record.name, copy.rank, copy.step)
        if target is None or opened is None:
            return  # alone now, or the shard was already evicted or deleted
        shard, handle = opened
        record = self._store.namespace(copy.record.account, copy.record.name) or copy.record
        started = time.monotonic()
        try:
            with handle:
                self._peers.replicate(target, record, copy.rank, copy.step, shard, handle)
        except (PeerUnavailable, OSError) as error:
            log.warning("tier replicate failed account=%s namespace=%s rank=%d step=%d peer=%s: %s",
                        record.account, record.name, copy.rank, copy.step, target.node, error)
            return
        seconds = time.monotonic() - started
        log.info("tier replicate account=%s namespace=%s rank=%d step=%d bytes=%d peer=%s seconds=%.3f",
                 record.account, record.name, copy.rank, copy.step, shard.size, target.node, seconds)
