"""Appending to and reading from log streams."""

import time
from collections.abc import Iterable

from django.db import transaction

from cloudwatch.models import LogEvent, LogStream


def get_stream(account_id: str, region: str, group_name: str, stream_name: str) -> LogStream:
    stream, _ = LogStream.objects.get_or_create(
        account_id=account_id, region=region, group_name=group_name, stream_name=stream_name
    )
    return stream


def append(stream: LogStream, events: Iterable[tuple[int, str]], cursor: str) -> None:
    """Store `events` (timestamp ms, message) and move the source cursor in one transaction, so a
    crash between reading the source and storing never loses or doubles a line."""
    now_ms = int(time.time() * 1000)
    rows = [
        LogEvent(stream=stream, timestamp_ms=ts, ingestion_time_ms=now_ms, message=msg) for ts, msg in events
    ]
    with transaction.atomic():
        LogEvent.objects.bulk_create(rows)
        LogStream.objects.filter(pk=stream.pk).update(source_cursor=cursor)
    stream.source_cursor = cursor


def tail(stream: LogStream, count: int) -> list[str]:
    newest = LogEvent.objects.filter(stream=stream).order_by("-timestamp_ms", "-pk")[:count]
    return [event.message for event in reversed(newest)]
