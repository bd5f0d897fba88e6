"""Metric time series, as CloudWatch keys them: storing them and reading them back.

Two kinds of series, both scoped to an account and region:
- points (`MetricDatum`): one value per line of output, e.g. a training job's MetricDefinitions;
  each resource's host publishes them under the dimensions `Host=<resource>/<host>`, and the
  resource as a whole under the dimension its feature registers (`TrainingJobName=<job>`).
- statistic sets (`MetricStatisticSet`): values added up per minute by the process that saw them,
  e.g. an endpoint variant's invocations, under their own dimensions."""
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest, Least

from logs import histograms
from logs.models import MetricDatum, MetricStatisticSet

HOST_DIMENSION = "Host"
POINTS_UNIT = "None"
# Namespace of point series → the dimension that names their resource; registered by the
# feature that stores them (training: `/aws/sagemaker/TrainingJobs` → `TrainingJobName`).
POINT_NAMESPACES: dict[str, str] = {}


def register_point_namespace(namespace: str, resource_dimension: str) -> None:
    POINT_NAMESPACES[namespace] = resource_dimension


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
    return list(_series(key, metric_name).order_by("-timestamp_ms", "-pk")[:limit])[::-1]


def earliest(key: SeriesKey, metric_name: str, limit: int) -> list[MetricDatum]:
    """The oldest `limit` points of one metric (every host), oldest first: a training job's
    values per epoch, as its tuning job's Hyperband search reads them."""
    return list(_series(key, metric_name).order_by("timestamp_ms", "pk")[:limit])


def _series(key: SeriesKey, metric_name: str):
    return MetricDatum.objects.filter(
        account_id=key.account_id,
        region=key.region,
        namespace=key.namespace,
        resource_name=key.resource_name,
        metric_name=metric_name,
    )


# --- statistic sets ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MinuteKey:
    """One metric of one minute: what a statistic set row is unique on."""

    account_id: str
    region: str
    namespace: str
    metric_name: str
    dimensions: tuple[tuple[str, str], ...]  # (name, value), sorted by name
    unit: str
    minute_ms: int


@dataclass(frozen=True)
class StatisticSet:
    count: float
    total: float
    minimum: float
    maximum: float
    histogram: histograms.Histogram | None = None  # how the values spread, when percentiles matter


def dimensions_key(dimensions: Iterable[tuple[str, str]]) -> str:
    """The stored form of a dimension set: one exact string per set, whatever the order given."""
    return json.dumps(sorted(dimensions), separators=(",", ":"))


def add_statistic_sets(sets: dict[MinuteKey, StatisticSet]) -> None:
    """Add each set to its minute's row (several processes add to the same rows): one UPDATE per
    set, an INSERT for a minute nobody wrote yet, and the UPDATE again if another process's
    INSERT came first. A histogram is merged in the UPDATE's transaction, after the UPDATE: the
    row is locked by then (SQLite: the transaction holds the write lock from its start)."""
    for key, added in sets.items():
        with transaction.atomic():
            if not _add_to_row(key, added):
                try:
                    with transaction.atomic():
                        _create_row(key, added)
                except IntegrityError:
                    _add_to_row(key, added)


def recorded(key: MinuteKey) -> bool:
    """Whether the metric has a value in that minute already (whatever its unit)."""
    return MetricStatisticSet.objects.filter(**_key_fields(key)).exists()


def _key_fields(key: MinuteKey) -> dict:
    return {
        "account_id": key.account_id,
        "region": key.region,
        "namespace": key.namespace,
        "metric_name": key.metric_name,
        "dimensions": dimensions_key(key.dimensions),
        "minute_ms": key.minute_ms,
    }


def _add_to_row(key: MinuteKey, added: StatisticSet) -> bool:
    row = MetricStatisticSet.objects.filter(**_key_fields(key))
    updated = row.update(
        sample_count=F("sample_count") + added.count,
        total=F("total") + added.total,
        minimum=Least(F("minimum"), Value(added.minimum)),
        maximum=Greatest(F("maximum"), Value(added.maximum)),
    )
    if updated and added.histogram:
        (stored,) = row.values_list("histogram", flat=True)
        merged = stored_histogram_of(stored) or {}
        histograms.merge(merged, added.histogram)
        row.update(histogram=_stored_histogram(merged))
    return bool(updated)


def _stored_histogram(histogram: histograms.Histogram | None) -> dict | None:
    return {str(index): count for index, count in histogram.items()} if histogram else None


def stored_histogram_of(stored: dict | None) -> histograms.Histogram | None:
    """A row's histogram column as logs/histograms.py counts it."""
    return {int(index): count for index, count in stored.items()} if stored else None


def _create_row(key: MinuteKey, added: StatisticSet) -> None:
    MetricStatisticSet.objects.create(
        **_key_fields(key),
        unit=key.unit,
        sample_count=added.count,
        total=added.total,
        minimum=added.minimum,
        maximum=added.maximum,
        histogram=_stored_histogram(added.histogram),
    )
