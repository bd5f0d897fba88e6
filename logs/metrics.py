"""Metric time series: storing points and reading the latest value of each metric."""
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from logs.models import MetricDatum


@dataclass(frozen=True)
class SeriesKey:
    """Whose points these are: CloudWatch's namespace plus the resource and host they came from."""

    account_id: str
    region: str
    namespace: str
    resource_name: str


def put(key: SeriesKey, host: str, points: Iterable[tuple[str, int, float]]) -> None:
    """Store (metric name, timestamp ms, value) points; the caller owns the transaction."""
    MetricDatum.objects.bulk_create(
        MetricDatum(
            account_id=key.account_id,
            region=key.region,
            namespace=key.namespace,
            resource_name=key.resource_name,
            host=host,
            metric_name=name,
            timestamp_ms=timestamp_ms,
            value=value,
        )
        for name, timestamp_ms, value in points
    )


def latest(key: SeriesKey, metric_names: Sequence[str]) -> list[MetricDatum]:
    """The newest point of each named metric that has one (any host; ties go to the last stored),
    in the order of `metric_names`. One indexed lookup per name: there are at most a few dozen."""
    points = MetricDatum.objects.filter(
        account_id=key.account_id, region=key.region, namespace=key.namespace, resource_name=key.resource_name
    )
    newest_first = points.order_by("-timestamp_ms", "-pk")
    newest = (newest_first.filter(metric_name=name).first() for name in metric_names)
    return [datum for datum in newest if datum is not None]


def history(key: SeriesKey, metric_name: str, limit: int) -> list[MetricDatum]:
    """The newest `limit` points of one metric (every host), oldest first: what a chart draws."""
    points = MetricDatum.objects.filter(
        account_id=key.account_id,
        region=key.region,
        namespace=key.namespace,
        resource_name=key.resource_name,
        metric_name=metric_name,
    )
    return list(points.order_by("-timestamp_ms", "-pk")[:limit])[::-1]
