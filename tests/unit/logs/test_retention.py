"""The sweeper's purge of log events older than SAGEPORT_LOG_RETENTION_DAYS."""
from logs import store
from logs.models import LogEvent, LogStream
from logs.retention import DAY_MS, purge_expired_events

NOW_MS = 100 * DAY_MS


def stream_with(events):
    stream = store.get_stream("123456789012", "us-east-1", "/aws/sagemaker/TrainingJobs", "job/algo-1-1")
    store.append(stream, events, cursor="c")
    return stream


def test_events_older_than_the_retention_are_deleted_and_the_stream_keeps_its_cursor(db, settings):
    settings.SAGEPORT_LOG_RETENTION_DAYS = 2
    stream = stream_with([(NOW_MS - 3 * DAY_MS, "old"), (NOW_MS - DAY_MS, "recent"), (NOW_MS, "new")])

    assert purge_expired_events(NOW_MS) == 1

    assert list(LogEvent.objects.values_list("message", flat=True)) == ["recent", "new"]
    kept = LogStream.objects.get(pk=stream.pk)
    assert (kept.first_event_ms, kept.last_event_ms, kept.source_cursor) == (NOW_MS - DAY_MS, NOW_MS, "c")


def test_a_stream_whose_events_all_expired_stays_without_event_times_until_new_ones(db, settings):
    settings.SAGEPORT_LOG_RETENTION_DAYS = 1
    stream = stream_with([(NOW_MS - 5 * DAY_MS, "old")])

    purge_expired_events(NOW_MS)
    assert LogStream.objects.get(pk=stream.pk).first_event_ms is None
    store.append(stream, [(NOW_MS, "new")], cursor="d")
    assert LogStream.objects.get(pk=stream.pk).first_event_ms == NOW_MS


def test_zero_days_keeps_every_event(db, settings):
    settings.SAGEPORT_LOG_RETENTION_DAYS = 0
    stream_with([(0, "ancient")])

    assert purge_expired_events(NOW_MS) == 0
    assert LogEvent.objects.count() == 1
