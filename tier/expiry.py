"""Deleting namespaces whose job is over: one not used for `grace_seconds` and whose owner job
(the last job that used it) has no running container left. A retried or restarted job of the
same account that uses the namespace again within the grace period keeps it (and becomes its
owner). Tombstones of deleted namespaces (store.py) are kept as long as that grace."""

import logging
import threading
import time
from collections.abc import Callable

from tier.config import NodeConfig
from tier.store import Store

log = logging.getLogger("sageport.tier")

MAX_INTERVAL_SECONDS = 30.0


class ExpirySweeper:
    def __init__(self, store: Store, config: Callable[[], NodeConfig], job_running: Callable[[str], bool],
                 clock=time.time):
        self._store = store
        self._config = config
        self._job_running = job_running
        self._clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tier-expiry", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def sweep_once(self) -> list[str]:
        """The namespaces deleted."""
        deleted = []
        moment = self._clock() - self._config().grace_seconds
        self._store.forget_deletions(before=moment)
        for record in self._store.unused_since(moment):
            if record.owner_job_arn and self._job_running(record.owner_job_arn):
                continue
            if self._store.delete_namespace(record.account, record.name, unused_since=moment):
                log.info("tier expired account=%s namespace=%s owner=%s", record.account, record.name,
                         record.owner_job_arn)
                deleted.append(record.name)
        return deleted

    def _run(self) -> None:
        while not self._stop.wait(self._interval()):
            try:
                self.sweep_once()
            except Exception:  # the sweep runs again next time
                log.exception("tier expiry sweep failed")

    def _interval(self) -> float:
        return min(MAX_INTERVAL_SECONDS, max(1.0, self._config().grace_seconds / 4))
