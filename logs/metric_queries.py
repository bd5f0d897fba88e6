"""Finding metrics and reading their samples, as CloudWatch names a metric: namespace, metric
name and the exact set of its dimensions (a request naming fewer or other dimensions names
another metric, which has no data)."""

import json
from dataclasses import dataclass

from logs.metrics import HOST_DIMENSION, POINT_NAMESPACES, POINTS_UNIT, dimensions_key, stored_histogram_of
from logs.models import MetricDatum, MetricStatisticSet
from logs.statistics import Sample


@dataclass(frozen=True)
class MetricId:
    namespace: str
    metric_name: str
    dimensions: tuple[tuple[str, str], ...]  # (name, value), sorted by name

    @classmethod
    def of(cls, namespace: str, metric_name: str, dimensions: list[dict]) -> "MetricId":
        pairs = sorted((dimension["Name"], dimension["Value"]) for dimension in dimensions)
        return cls(namespace, metric_name, tuple(pairs))

    def as_wire(self) -> dict:
        return {
            "Namespace": self.namespace,
            "MetricName": self.metric_name,
            "Dimensions": [{"Name": name, "Value": value} for name, value in self.dimensions],
        }


@dataclass(frozen=True)
class Scope:
    account_id: str
    region: str


def samples(scope: Scope, metric: MetricId, start_ms: int, end_ms: int) -> tuple[list[Sample], str | None]:
    """The metric's samples in [start, end) and its unit (None: no such metric). A metric whose
    dimensions a point namespace reads (training's `Host`) is points when it has any there, else
    statistic sets: the same Host names a job's instance metrics (jobs/instance_metrics.py)."""
    point_filter = _point_filter(metric)
    if point_filter is not None:
        points = MetricDatum.objects.filter(
            account_id=scope.account_id,
            region=scope.region,
            namespace=metric.namespace,
            metric_name=metric.metric_name,
            timestamp_ms__gte=start_ms,
            timestamp_ms__lt=end_ms,
            **point_filter,
        ).values_list("timestamp_ms", "value")
        found = [Sample.point(timestamp_ms, value) for timestamp_ms, value in points.iterator()]
        if found:
            return found, POINTS_UNIT
    rows = MetricStatisticSet.objects.filter(
        account_id=scope.account_id,
        region=scope.region,
        namespace=metric.namespace,
        metric_name=metric.metric_name,
        dimensions=dimensions_key(metric.dimensions),
        minute_ms__gte=start_ms,
        minute_ms__lt=end_ms,
    ).values_list("minute_ms", "sample_count", "total", "minimum", "maximum", "unit", "histogram")
    found, units = [], set()
    for minute_ms, count, total, minimum, maximum, unit, histogram in rows.iterator():
        found.append(Sample(minute_ms, count, total, minimum, maximum, None, stored_histogram_of(histogram)))
        units.add(unit)
    return found, min(units) if units else None  # one unit per metric: its publisher's


def _point_filter(metric: MetricId) -> dict | None:
    """How a point series' dimensions select its rows; None when the metric is not one."""
    resource_dimension = POINT_NAMESPACES.get(metric.namespace)
    if resource_dimension is None or len(metric.dimensions) != 1:
        return None
    ((name, value),) = metric.dimensions
    if name == resource_dimension:
        return {"resource_name": value}
    resource, separator, host = value.rpartition("/")
    if name == HOST_DIMENSION and separator:
        return {"resource_name": resource, "host": host}
    return None


def metrics(
    scope: Scope, namespace: str | None, metric_name: str | None, since_ms: int | None
) -> list[MetricId]:
    """Every metric with data in the scope (since `since_ms`, if given), sorted."""
    found = _point_metrics(scope, namespace, metric_name, since_ms) | _set_metrics(
        scope, namespace, metric_name, since_ms
    )
    return sorted(found, key=lambda metric: (metric.namespace, metric.metric_name, metric.dimensions))


def _point_metrics(scope, namespace, metric_name, since_ms) -> set[MetricId]:
    rows = MetricDatum.objects.filter(account_id=scope.account_id, region=scope.region)
    rows = (
        rows.filter(namespace=namespace) if namespace else rows.filter(namespace__in=list(POINT_NAMESPACES))
    )
    rows = _narrowed(rows, metric_name, since_ms and {"timestamp_ms__gte": since_ms})
    found = set()
    series = rows.values_list("namespace", "resource_name", "host", "metric_name").order_by().distinct()
    for space, resource, host, name in series.iterator():
        found.add(MetricId(space, name, ((HOST_DIMENSION, f"{resource}/{host}"),)))
        if space in POINT_NAMESPACES:
            found.add(MetricId(space, name, ((POINT_NAMESPACES[space], resource),)))
    return found


def _set_metrics(scope, namespace, metric_name, since_ms) -> set[MetricId]:
    rows = MetricStatisticSet.objects.filter(account_id=scope.account_id, region=scope.region)
    rows = rows.filter(namespace=namespace) if namespace else rows
    rows = _narrowed(rows, metric_name, since_ms and {"minute_ms__gte": since_ms})
    series = rows.values_list("namespace", "metric_name", "dimensions").order_by().distinct()
    return {
        MetricId(space, name, tuple(tuple(pair) for pair in json.loads(dimensions)))
        for space, name, dimensions in series.iterator()
    }


def _narrowed(rows, metric_name: str | None, since: dict | None):
    if metric_name:
        rows = rows.filter(metric_name=metric_name)
    return rows.filter(**since) if since else rows
