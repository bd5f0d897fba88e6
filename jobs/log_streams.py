"""A container job's output in CloudWatch Logs: one stream per instance in its kind's log group,
named as SageMaker names it (`<job>/<host>-<creation epoch>`), filled from the engine's logs."""
from collections.abc import Callable

from django.conf import settings

from jobs.identity import JobIdentity
from logs import container_logs, store
from logs.container_logs import LineObserver
from logs.models import LogStream
from runtime.base import ContainerRuntime, ContainerState


def stream(job: JobIdentity, host: str) -> LogStream:
    epoch = int(job.creation_time.timestamp())
    return store.get_stream(job.account_id, job.region, job.kind.log_group, f"{job.name}/{host}-{epoch}")


def collect(
    runtime: ContainerRuntime,
    job: JobIdentity,
    states: dict[str, ContainerState | None],
    observer: Callable[[str], LineObserver | None] = lambda host: None,
    max_bytes: int | None = None,
) -> bool:
    """Copy the new output of these containers (by host; None: no container) into their streams;
    `observer(host)` derives data from the lines as they are stored (training's metrics); with
    `max_bytes`, at most about that much of each container's output. Whether all is copied."""
    copied = True
    for host, state in states.items():
        if state is not None:
            into = stream(job, host)
            copied &= container_logs.collect(runtime, state.name, into, observer(host), max_bytes)
    return copied


def tail(job: JobIdentity, host: str) -> list[str]:
    """The instance's last SAGEPORT_LOG_TAIL_LINES lines, for a FailureReason."""
    return store.tail(stream(job, host), settings.SAGEPORT_LOG_TAIL_LINES)
