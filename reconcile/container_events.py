"""React to the engine's container events at once, instead of at the next poll.

Every node's Celery worker follows its own engine's event stream from one daemon thread
(started by `capacity/node_agent.py` once the worker is ready): only the containers this stack
created on this node (labels `sageport.stack`, `sageport.node`), only the actions some feature
asked for. An event names its container's role and resource (`sageport.role`,
`sageport.resource`); the feature that registered the role nudges that resource's reconcile
chain (`leases.due_now`, then a message to the node's queue), so a container that exits is
looked at within milliseconds, not SAGEPORT_POLL_INTERVAL_SECONDS later.

Why a thread in the worker and not a service of its own: it lives and dies with the worker that
acts on the nudges (the supervisor, `runnode` and compose already restart that worker), it needs
no settings, queue or process of its own, and a blocked read of a socket costs nothing while no
container changes. It never touches the worker's task processing: it only writes a timestamp and
publishes a message. The periodic poll and the sweeper stay the safety net: events missed while
the stream is down (the engine restarting, the worker starting) are found by them as before.
The stream is resumed from the last event seen (the engine replays what followed it), and
reconnected with backoff while the engine is away; no failure ends the thread."""

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import connection

from runtime import labels
from runtime.base import ContainerEvent, ContainerRuntime

log = logging.getLogger(__name__)

FIRST_RETRY_SECONDS = 0.5
MAX_RETRY_SECONDS = 30.0

# Nudges the reconcile chain of the resource whose ARN (`sageport.resource`) it is given.
Nudge = Callable[[str], None]


@dataclass(frozen=True)
class Interest:
    actions: frozenset[str]
    nudge: Nudge


_interests: dict[str, Interest] = {}


def register(role: str, nudge: Nudge, actions: Iterable[str] = ("die",)) -> None:
    """Called in a feature's AppConfig.ready: containers of `role` doing one of `actions` (the
    engine's words: die, start, health_status, oom) nudge their resource."""
    _interests[role] = Interest(frozenset(actions), nudge)


def nudge_for(event: ContainerEvent) -> tuple[Nudge, str] | None:
    """Whom the event concerns: the registered nudge and the resource to pass it; None when no
    feature cares (another role, an action not asked for, a container without resource)."""
    interest = _interests.get(event.labels.get(labels.ROLE, ""))
    resource = event.labels.get(labels.RESOURCE, "")
    if interest is None or event.action not in interest.actions or not resource:
        return None
    return interest.nudge, resource


class Watcher:
    """Follows one engine's container events for one node, until `stop` is set."""

    def __init__(self, runtime: ContainerRuntime, node: str, stop: threading.Event | None = None):
        self.runtime = runtime
        self.selector = {**labels.own(), labels.NODE: node}
        self.stop = stop or threading.Event()
        self.since: str | None = None  # the last event seen: a new stream resumes after it

    def run(self) -> None:
        retry = FIRST_RETRY_SECONDS
        while not self.stop.is_set():
            if self.follow_once():
                retry = FIRST_RETRY_SECONDS  # it was connected: the engine is back
            if self.stop.wait(retry):
                return
            retry = min(2 * retry, MAX_RETRY_SECONDS)

    def follow_once(self) -> bool:
        """Follow one stream until it ends; True when it connected. Nothing escapes."""
        actions = sorted(set().union(*(interest.actions for interest in _interests.values())))
        try:
            events = self.runtime.container_events(self.selector, actions, since=self.since)
        except Exception as error:  # RuntimeUnavailable most often: the engine is away
            log.warning("container events: cannot follow the engine (%s); retrying", error)
            return False
        try:
            for event in events:
                self.since = event.time
                self.handle(event)
                if self.stop.is_set():
                    break
        except Exception as error:  # the stream broke off: reconnect, resuming after `since`
            log.warning("container events: the stream broke off (%s); reconnecting", error)
        return True

    def handle(self, event: ContainerEvent) -> None:
        target = nudge_for(event)
        if target is None:
            return
        nudge, resource = target
        try:
            nudge(resource)
        except Exception:  # the database or broker away for a moment: the poll covers this one
            log.exception("container events: no nudge for %s (%s: %s)", resource, event.name, event.action)
        finally:
            connection.close()  # this thread's own connection, never left open between events


def start(runtime: ContainerRuntime, node: str) -> Watcher:
    """Follow the engine from a daemon thread that ends with the process."""
    watcher = Watcher(runtime, node)
    threading.Thread(target=watcher.run, name="container-events", daemon=True).start()
    return watcher
