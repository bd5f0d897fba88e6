"""Tell whoever waits on a resource that it ended, at once, instead of at their next poll.

A pipeline execution follows its steps' jobs by looking at them every
SAGEPORT_POLL_INTERVAL_SECONDS: without a word from the job it learns of its end up to a whole
interval late, and every job step of a chain adds that wait (bench/pipeline.py measured about 1 s
a step). The features that own jobs (training, processing, batch transform, tuning) call `ended`
when a job reaches a terminal status; the features above them that wait on such jobs (pipelines)
register a listener in their AppConfig.ready, since the lower layers must not import them. The
listeners run once the ending's transaction committed, so what they start sees the end; a
listener that fails is only logged: the poll and the sweeper stay the safety net."""

import logging
from collections.abc import Callable

from django.db import transaction

log = logging.getLogger(__name__)

# Given the name of the resource that ended (a job's name, unique per kind and account).
Listener = Callable[[str], None]

_listeners: list[Listener] = []


def register(listener: Listener) -> None:
    """Called in a feature's AppConfig.ready."""
    if listener not in _listeners:
        _listeners.append(listener)


def ended(name: str) -> None:
    """The resource `name` reached a terminal status: its listeners hear of it after the commit."""
    transaction.on_commit(lambda: _tell(name))


def _tell(name: str) -> None:
    for listener in _listeners:
        try:
            listener(name)
        except Exception:  # noqa: BLE001 - a missed word costs one poll interval, never the ending
            log.exception("could not tell %s that %s ended", listener, name)
