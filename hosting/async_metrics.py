"""The backlog metrics SageMaker publishes for an asynchronous endpoint (`AWS/SageMaker`,
dimension `EndpointName`), read from the queue's rows at each sweep (one sample per sweep, added
up per minute as CloudWatch statistic sets): ApproximateBacklogSize (requests waiting or running),
ApproximateBacklogSizePerInstance (that over the InService instances), ApproximateAgeOfOldestRequest
(seconds since the oldest of them was accepted) and HasBacklogWithoutCapacity (1 while there is a
backlog and no instance to run it)."""

from datetime import datetime
from typing import NamedTuple

from django.db.models import Count, Min
from django.utils import timezone

from hosting import async_queue
from hosting.models import ROUTED_PHASES, Endpoint
from logs.metrics import MinuteKey, StatisticSet, add_statistic_sets

NAMESPACE = "AWS/SageMaker"
COUNT = "None"
SECONDS = "Seconds"


class Backlog(NamedTuple):
    size: int
    instances: int
    oldest: datetime | None


def values(backlog: Backlog, now: datetime) -> dict[tuple[str, str], float]:
    """{(metric, unit): value} of one endpoint's backlog."""
    age = (now - backlog.oldest).total_seconds() if backlog.oldest else 0.0
    per_instance = backlog.size / backlog.instances if backlog.instances else float(backlog.size)
    return {
        ("ApproximateBacklogSize", COUNT): float(backlog.size),
        ("ApproximateBacklogSizePerInstance", COUNT): per_instance,
        ("ApproximateAgeOfOldestRequest", SECONDS): max(age, 0.0),
        ("HasBacklogWithoutCapacity", COUNT): 1.0 if backlog.size and not backlog.instances else 0.0,
    }


def publish(now: datetime | None = None) -> None:
    now = now or timezone.now()
    minute_ms = int(now.timestamp() // 60 * 60_000)
    sets = {}
    for endpoint in _async_endpoints():
        dimensions = (("EndpointName", endpoint.endpoint_name),)
        for (name, unit), value in values(_backlog(endpoint), now).items():
            key = MinuteKey(
                endpoint.account_id, endpoint.region, NAMESPACE, name, dimensions, unit, minute_ms
            )
            sets[key] = StatisticSet(count=1, total=value, minimum=value, maximum=value)
    if sets:
        add_statistic_sets(sets)


def _async_endpoints():
    return Endpoint.objects.filter(
        deployments__phase__in=ROUTED_PHASES,
        deployments__snapshot__EndpointConfig__has_key="AsyncInferenceConfig",
    ).distinct()


def _backlog(endpoint: Endpoint) -> Backlog:
    open_rows = endpoint.async_invocations.filter(status__in=async_queue.OPEN_STATUSES)
    summary = open_rows.aggregate(size=Count("pk"), oldest=Min("created_at"))
    return Backlog(summary["size"], async_queue.routable_containers(endpoint).count(), summary["oldest"])
