"""Copying container output into log streams, incrementally and exactly once."""

from datetime import datetime
from typing import Protocol

from django.db import transaction

from logs import store
from logs.models import LogStream
from runtime.base import ContainerRuntime

EVENTS_PER_COMMIT = 2000


def rfc3339_to_ms(timestamp: str) -> int:
    """Docker stamps lines with nanoseconds ("2026-11-22T03:01:02.123456789Z"); keep milliseconds."""
    head, _, fraction = timestamp.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(head + "+00:00").timestamp()
    return int(seconds) * 1000 + int((fraction + "000")[:3])


class LineObserver(Protocol):
    """Derives data from stored lines (e.g. training.metrics.TrainingMetrics) in their transaction."""

    def record(self, events: list[tuple[int, str]]) -> None: ...


def collect(
    runtime: ContainerRuntime,
    container_name: str,
    stream: LogStream,
    observer: LineObserver | None = None,
    max_bytes: int | None = None,
) -> bool:
    """Copy the container's new output into `stream`; with `max_bytes`, about that much of it at
    most (a container flooding its output cannot make one call large). Stored EVENTS_PER_COMMIT
    lines per transaction, so that a large read never holds the database's write lock long.
    Whether all of its output so far is copied."""
    lines = runtime.logs(container_name, since=stream.source_cursor or None, max_bytes=max_bytes)
    for start in range(0, len(lines), EVENTS_PER_COMMIT):
        batch = lines[start : start + EVENTS_PER_COMMIT]
        events = [(rfc3339_to_ms(line.timestamp), line.message) for line in batch]
        # The lines, what the observer derives from them and the cursor commit together: a crash
        # neither loses nor doubles a metric point.
        with transaction.atomic():
            store.append(stream, events, cursor=batch[-1].timestamp)
            if observer is not None:
                observer.record(events)
    return max_bytes is None or sum(len(line.message) for line in lines) < max_bytes
