"""Deleting log events older than the retention setting (run by the sweeper)."""
import time

from django.conf import settings
from django.db import transaction
from django.db.models import Min

from logs.models import LogEvent, LogStream

DAY_MS = 86_400_000


def purge_expired_events(now_ms: int | None = None) -> int:
    """Delete events stamped before now − SAGEPORT_LOG_RETENTION_DAYS; return how many went.

    Streams stay, with their source cursor, so a container still running is never read again
    from the start; only their first-event time moves to the oldest event kept."""
    if not settings.SAGEPORT_LOG_RETENTION_DAYS:
        return 0
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now_ms - int(settings.SAGEPORT_LOG_RETENTION_DAYS * DAY_MS)
    # Only streams that hold expired events are touched; each delete uses the (stream, time) index.
    expired_streams = LogStream.objects.filter(first_event_ms__lt=cutoff)
    deleted = 0
    for stream_id in expired_streams.values_list("pk", flat=True):
        events = LogEvent.objects.filter(stream_id=stream_id)
        with transaction.atomic():
            deleted += events.filter(timestamp_ms__lt=cutoff).delete()[0]
            oldest_kept = events.aggregate(first=Min("timestamp_ms"))["first"]
            LogStream.objects.filter(pk=stream_id).update(first_event_ms=oldest_kept)
    return deleted
