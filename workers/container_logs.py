"""Copying container output into log streams, incrementally and exactly once."""

from datetime import datetime
from typing import Protocol

from django.db import transaction

from cloudwatch import store
from cloudwatch.models import LogStream
from jobs.models import TrainingJob
from workers.runtime.base import ContainerRuntime

TRAINING_LOG_GROUP = "/aws/sagemaker/TrainingJobs"


def rfc3339_to_ms(timestamp: str) -> int:
    """Docker stamps lines with nanoseconds ("2026-11-22T03:01:02.123456789Z"); keep milliseconds."""
    head, _, fraction = timestamp.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(head + "+00:00").timestamp()
    return int(seconds) * 1000 + int((fraction + "000")[:3])


def training_stream(job: TrainingJob, host: str) -> LogStream:
    epoch = int(job.creation_time.timestamp())
    return store.get_stream(
        job.account_id, job.region, TRAINING_LOG_GROUP, f"{job.training_job_name}/{host}-{epoch}"
    )


class LineObserver(Protocol):
    """Derives data from stored lines (e.g. workers.metrics.TrainingMetrics) in their transaction."""

    def record(self, events: list[tuple[int, str]]) -> None: ...


def collect(
    runtime: ContainerRuntime, container_name: str, stream: LogStream, observer: LineObserver | None = None
) -> None:
    lines = runtime.logs(container_name, since=stream.source_cursor or None)
    if lines:
        events = [(rfc3339_to_ms(line.timestamp), line.message) for line in lines]
        # The lines, what the observer derives from them and the cursor commit together: a crash
        # neither loses nor doubles a metric point.
        with transaction.atomic():
            store.append(stream, events, cursor=lines[-1].timestamp)
            if observer is not None:
                observer.record(events)
