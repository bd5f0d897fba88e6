"""Appending to and reading from log streams."""
import time
from collections.abc import Sequence

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest, Least

from logs.models import LogEvent, LogStream


def get_stream(account_id: str, region: str, group_name: str, stream_name: str) -> LogStream:
    stream, _ = LogStream.objects.get_or_create(
        account_id=account_id, region=region, group_name=group_name, stream_name=stream_name
    )
    return stream


def append(stream: LogStream, events: Sequence[tuple[int, str]], cursor: str) -> None:
    """Store `events` (timestamp ms, message) and move the source cursor in one transaction, so a
    crash between reading the source and storing never loses or doubles a line. Callers may wrap
    it in their own transaction to store what they derive from the same lines atomically."""
    now_ms = int(time.time() * 1000)
    rows = [
        LogEvent(stream=stream, timestamp_ms=timestamp_ms, ingestion_time_ms=now_ms, message=message)
        for timestamp_ms, message in events
    ]
    bounds = {"source_cursor": cursor}
    if rows:
        first, last = min(ts for ts, _ in events), max(ts for ts, _ in events)
        bounds.update(
            first_event_ms=Least(Coalesce(F("first_event_ms"), Value(first)), Value(first)),
            last_event_ms=Greatest(Coalesce(F("last_event_ms"), Value(last)), Value(last)),
            last_ingestion_ms=Value(now_ms),
        )
    with transaction.atomic():
        LogEvent.objects.bulk_create(rows)
        LogStream.objects.filter(pk=stream.pk).update(**bounds)
    stream.source_cursor = cursor


def tail(stream: LogStream, count: int) -> list[str]:
    newest = LogEvent.objects.filter(stream=stream).order_by("-timestamp_ms", "-pk")[:count]
    return [event.message for event in reversed(newest)]


def read(stream: LogStream, since_ms: int | None = None, tail: int | None = None) -> list[tuple[int, str]]:
    """The stream's events (timestamp ms, message) in order: those at or after `since_ms`, the
    newest `tail` of them when given."""
    events = LogEvent.objects.filter(stream=stream)
    if since_ms is not None:
        events = events.filter(timestamp_ms__gte=since_ms)
    if tail is None:
        return list(events.order_by("timestamp_ms", "pk").values_list("timestamp_ms", "message"))
    newest = events.order_by("-timestamp_ms", "-pk").values_list("timestamp_ms", "message")[:tail]
    return list(reversed(newest))
