"""Keeping every shard on two live nodes: the repair sweep. Every `interval` seconds each node
asks the live peers which shards of its namespaces they hold, and copies every shard it holds
that no live peer does to its first live neighbour (replication.py). That one rule covers a copy
that failed or was never queued (retried until it lands, or until the shard is gone here:
superseded by retention, evicted or deleted), and a lost node (the survivors that held its
shards, or its replicas, copy them again). A peer that does not answer counts as lost; only
shards held on this node alone move, so copies stay at about two. After a sweep whose copies
failed the next waits longer (doubling, up to MAX_BACKOFF times the interval). A namespace
unused for its grace period is left alone: it is about to expire (expiry.py), and copying it
around would keep it alive."""

import logging
import threading
import time
from collections.abc import Callable

from tier import rules
from tier.peers import Peers, inventory_steps
from tier.replication import Replicator
from tier.store import Namespace, Store

log = logging.getLogger("sageport.tier")

MAX_BACKOFF = 8


class RepairSweep:
    def __init__(self, store: Store, peers: Peers, replicator: Replicator, interval: float,
                 grace_seconds: Callable[[], int], clock: Callable[[], float] = time.time):
        self._store = store
        self._grace_seconds = grace_seconds
        self._clock = clock
        self._peers = peers
        self._replicator = replicator
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tier-repair", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def sweep_once(self) -> tuple[int, int]:
        """(shards copied, shards still held here alone that could not be copied)."""
        copied = failed = 0
        idle_since = self._clock() - self._grace_seconds()
        for record, steps in self._store.holdings():
            if self._peers.replica_target() is None:
                break  # alone, or every other node is down: nothing to copy to
            if record.last_used < idle_since:
                continue
            for rank, step in self._alone_here(record, steps):
                if self._replicator.copy(record, rank, step):
                    copied += 1
                elif self._store.holds(record.account, record.name, rank, step):
                    failed += 1
        if copied or failed:
            log.info("tier repair copied=%d failed=%d", copied, failed)
        return copied, failed

    def _alone_here(self, record: Namespace, steps: dict[int, list[int]]) -> list[tuple[int, int]]:
        elsewhere = rules.merge([self._inventory_steps(answer)
                                 for answer in self._peers.inventories(record.account, record.name)])
        return [(rank, step) for step, ranks in sorted(steps.items(), reverse=True) for rank in ranks
                if rank not in elsewhere.get(step, ())
                and not self._replicator.pending((record.account, record.name, rank, step))]

    @staticmethod
    def _inventory_steps(answer: dict) -> dict[int, list[int]]:
        try:
            return inventory_steps(answer)
        except (KeyError, TypeError, ValueError, AttributeError):
            return {}  # an unreadable answer holds nothing we can count on

    def _run(self) -> None:
        delay = self._interval
        while not self._stop.wait(delay):
            try:
                _, failed = self.sweep_once()
            except Exception:  # the sweep runs again next time
                log.exception("tier repair sweep failed")
                failed = 1
            delay = min(delay * 2, self._interval * MAX_BACKOFF) if failed else self._interval
