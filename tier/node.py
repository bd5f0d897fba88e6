"""One node's tier service, assembled: the store, the configuration, both listeners, the
replication workers, the repair sweep and the expiry sweep. `python -m tier` runs one; tests run
several in one process, with their own identity functions instead of the Docker engine."""

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tier.api import ClusterApi, LocalApi
from tier.config import ConfigFile
from tier.expiry import ExpirySweeper
from tier.peers import Peers
from tier.repair import RepairSweep
from tier.replication import Replicator
from tier.server import TierServer, container_callers, peer_callers
from tier.store import Store

log = logging.getLogger("sageport.tier")

POLL_SECONDS = 0.1  # how soon a listener notices it is being stopped


@dataclass(frozen=True)
class NodeSettings:
    node: str
    listen: tuple[str, int]
    peer_listen: tuple[str, int]
    root: Path
    config_path: Path
    token: str
    job_of: Callable[[str], str | None]  # a container's source address → its job's ARN
    job_running: Callable[[str], bool]
    peer_connect_timeout: float = 2.0
    peer_io_timeout: float = 10.0  # per socket operation, so a big shard may take longer
    repair_seconds: float = 5.0  # how often shards held on this node alone are copied again
    replica_wait_seconds: float = 15.0  # the longest a write waits for its copy to land


class TierNode:
    def __init__(self, settings: NodeSettings):
        if not settings.token:
            raise ValueError("the peer token is empty")
        self.settings = settings
        self.config = ConfigFile(str(settings.config_path))
        self.store = Store(settings.root, lambda: self.config.current().budget_bytes)
        self.peers = Peers(settings.node, self.config.current, settings.token,
                           settings.peer_connect_timeout, settings.peer_io_timeout)
        self.replicator = Replicator(self.store, self.peers)
        self.repair = RepairSweep(self.store, self.peers, self.replicator, settings.repair_seconds,
                                  lambda: self.config.current().grace_seconds)
        self.sweeper = ExpirySweeper(self.store, self.config.current, settings.job_running)
        cluster_api = ClusterApi(self.store, self.peers, self.replicator, settings.replica_wait_seconds)
        self.container_server = TierServer(settings.listen, cluster_api, container_callers(settings.job_of))
        peer_api = LocalApi(self.store)
        self.peer_server = TierServer(settings.peer_listen, peer_api, peer_callers(settings.token))
        self._threads = [
            threading.Thread(target=server.serve_forever, args=(POLL_SECONDS,), name="tier-http", daemon=True)
            for server in (self.container_server, self.peer_server)
        ]

    @property
    def ports(self) -> tuple[int, int]:
        return self.container_server.server_address[1], self.peer_server.server_address[1]

    def start(self) -> None:
        self.replicator.start()
        self.repair.start()
        self.sweeper.start()
        for thread in self._threads:
            thread.start()
        log.info("tier node %s serving containers on %s:%d, peers on %s:%d", self.settings.node,
                 *self.container_server.server_address[:2], *self.peer_server.server_address[:2])

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop accepting, let requests in flight and queued copies finish (within `timeout`
        seconds each); whether everything finished."""
        for server in (self.container_server, self.peer_server):
            server.shutdown()
            server.server_close()
        idle = all(server.wait_idle(timeout) for server in (self.container_server, self.peer_server))
        self.repair.stop()
        self.replicator.stop(timeout)
        self.sweeper.stop()
        return idle
