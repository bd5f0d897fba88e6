"""The data path inside one serving process (the data plane's, or the API's): a routing table in
memory, kept fresh by a background thread that a routing change wakes at once, and the requests
in flight per container.

See hosting/runtime_api/routing.py for how the table is refreshed and acknowledged. A request never
touches Redis and queries the database only for an endpoint its table lacks (or shows unusable):
it reads the table under a lock, picks a container, counts itself in flight there (the count
travels in the process's ack, so a drain waits for it), and forwards. While Redis or the
database is away, the refresh thread keeps the last table it could load and requests go on."""

import logging
import os
import random
import socket
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import DatabaseError, close_old_connections

from hosting.runtime_api import routing
from hosting.runtime_api.routing import Backend, EndpointRoute, RouteGroup, RoutingTable

log = logging.getLogger(__name__)

# Even without a change announced, reload now and then (a lost Redis counter, a missed bump).
FULL_RELOAD_SECONDS = 5.0


class NoRoute(Exception):
    """The endpoint has no container that can take this request right now."""


@dataclass(frozen=True)
class Choice:
    variant_name: str
    backend: Backend


class Router:
    def __init__(self):
        self._process_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._lock = threading.Lock()  # guards the table, the version and the in-flight counts
        self._start_lock = threading.Lock()
        self._table: RoutingTable = {}
        self._version: int | None = None  # the version the table is known to include
        self._loaded_at = 0.0  # when the database read behind the table began (monotonic)
        self._busy: Counter[str] = Counter()
        self._started = False
        self._failing: str | None = None  # what the refresh thread last failed on, for the log

    # --- table --------------------------------------------------------------------------------

    def route(self, endpoint_arn: str) -> EndpointRoute | None:
        """The endpoint's route. One that looks unusable is read again from the database first,
        so that an endpoint DescribeEndpoint already shows InService is never refused. Never
        touches Redis, and a database that fails leaves the last table in use."""
        if not self._started:
            self.start()
        route = self.lookup(endpoint_arn)
        if not usable(route):
            try:
                self._reload()
            except DatabaseError as error:
                log.warning("routing table reload failed, serving the last one: %s", error)
            route = self.lookup(endpoint_arn)
        return route

    def lookup(self, endpoint_arn: str) -> EndpointRoute | None:
        """The endpoint's route in the table as it is: no database, no Redis (an event loop may
        call it; `route` when it is not `usable`, off the loop)."""
        with self._lock:
            return self._table.get(endpoint_arn)

    def start(self) -> None:
        """Load the first table and start the refresh thread (once; `route` calls it if needed)."""
        with self._start_lock:
            if self._started:
                return
            self._reload()  # the first request needs a table; Redis is the thread's business
            threading.Thread(target=self._refresh_forever, name="routing-refresh", daemon=True).start()
            self._started = True

    def _refresh_forever(self) -> None:
        # Announce this process before reading the version (see routing.py for why); the table
        # loaded by `start` is at most this thread's start-up older, well within a drain's minimum.
        self._attempt(lambda: routing.publish_ack(self._process_id, 0, {}))
        changes = routing.ChangeListener()
        while True:
            self._attempt(self.refresh)
            changes.wait(settings.SAGEPORT_ROUTING_REFRESH_SECONDS)  # a change announced ends it

    def _attempt(self, action) -> None:
        """Run a refresh step; Redis or the database away for a while is logged once, not per tick."""
        try:
            action()
        except (redis.RedisError, DatabaseError) as error:
            if self._failing is None:
                log.warning("routing refresh failing, serving the last table: %s", error)
            self._failing = str(error)
            return
        except Exception:
            log.exception("routing table refresh failed")
            return
        if self._failing is not None:
            log.warning("routing refresh works again")
            self._failing = None

    def refresh(self) -> None:
        """Reload the table when the version moved (and now and then), then acknowledge it.
        Without Redis the version is unknown, so the table is reloaded from the database at every
        tick: a container leaving the table is still seen at once, while its drain waits for Redis."""
        try:
            version = routing.current_version()
        except redis.RedisError:
            self._reload()
            raise
        stale = time.monotonic() - self._loaded_at > FULL_RELOAD_SECONDS
        if stale or version != self._version:
            self._reload(version)
        self._publish()

    def _reload(self, version: int | None = None) -> None:
        """Read the table from the database. `version`: read from Redis before this load began,
        hence included in it. Loads may overlap (a request's, the thread's): the one begun last wins."""
        began = time.monotonic()
        close_old_connections()
        table = routing.load_table()
        with self._lock:
            if version is not None:
                self._version = version
            if began < self._loaded_at:
                return
            self._table, self._loaded_at = table, began

    def _publish(self) -> None:
        with self._lock:
            version = self._version or 0
            busy = {name: count for name, count in self._busy.items() if count}
        routing.publish_ack(self._process_id, version, busy)

    # --- requests -----------------------------------------------------------------------------

    def choose(
        self, endpoint_arn: str, target_variant: str | None, avoid: set[str],
        prefer: frozenset[str] = frozenset(),
    ) -> Choice:
        """Pick a container by variant weight (or the target variant), the least busy one of its
        group (among those in `prefer` if any: a multi-model container that has the target model
        loaded), and count the request in flight there. Call `release` when done."""
        with self._lock:
            route = self._table.get(endpoint_arn)
            groups = [
                RouteGroup(
                    g.variant_name, g.weight, tuple(b for b in g.backends if b.container_name not in avoid)
                )
                for g in (route.groups if route else ())
                if target_variant is None or g.variant_name == target_variant
            ]
            groups = [group for group in groups if group.backends]
            if not groups:
                raise NoRoute()
            group = _weighted_choice(groups)
            backend = min(
                group.backends,
                key=lambda b: (b.container_name not in prefer, self._busy[b.container_name], random.random()),
            )
            self._busy[backend.container_name] += 1
            return Choice(group.variant_name, backend)

    def release(self, choice: Choice) -> None:
        with self._lock:
            self._busy[choice.backend.container_name] -= 1


def usable(route: EndpointRoute | None) -> bool:
    """Whether a route can be used as the table has it (else it is read again first)."""
    return route is not None and route.status in routing.ROUTABLE_ENDPOINT_STATUSES


def _weighted_choice(groups: list[RouteGroup]) -> RouteGroup:
    weighted = [group for group in groups if group.weight > 0]
    if not weighted:  # only zero-weight variants left (targeted, or the others have no container)
        return random.choice(groups)
    return random.choices(weighted, weights=[group.weight for group in weighted])[0]


_router: Router | None = None
_router_lock = threading.Lock()


def get_router() -> Router:
    """The process-wide router, created on the first invocation this process serves (the API's
    request threads may each serve their first at once: one router for all of them)."""
    global _router
    if _router is None:
        with _router_lock:
            if _router is None:
                _router = Router()
    return _router
