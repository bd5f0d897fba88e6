"""The multi-model endpoint metrics SageMaker publishes (`AWS/SageMaker`, dimensions
`EndpointName` and `VariantName`), one value per request with a TargetModel:

- ModelCacheHit: 1 when the model was loaded in the container already, else 0 (its Average is
  the hit rate, as in SageMaker);
- ModelLoadingWaitTime (microseconds): how long a request that missed waited for its model to be
  downloaded and loaded (misses only);
- ModelLoadedCount: how many models the container held loaded after the request's load check.

Added up in memory per variant and minute and written with the invocation metrics' flush
interval (SAGEPORT_INVOCATION_METRICS_FLUSH_SECONDS) by a background thread, as
invocation_metrics.py does; a write that fails is kept for the next flush."""

import threading
import time
from typing import NamedTuple

from django.conf import settings
from django.db import DatabaseError

from hosting.runtime_api.invocation_metrics import COUNT, MICROSECONDS, NAMESPACE, flush_forever
from logs.metrics import MinuteKey, StatisticSet, add_statistic_sets
from protocol.context import RequestContext


class ModelLoad(NamedTuple):
    ctx: RequestContext
    endpoint_name: str
    variant_name: str
    hit: bool
    wait_seconds: float
    loaded_count: int


def _one(value: float) -> StatisticSet:
    return StatisticSet(1, value, value, value)


def _sum(a: StatisticSet, b: StatisticSet) -> StatisticSet:
    return StatisticSet(
        a.count + b.count, a.total + b.total, min(a.minimum, b.minimum), max(a.maximum, b.maximum)
    )


class ModelMetrics:
    def __init__(self, flush_seconds: float, *, background: bool = True):
        """`background=False`: no flush thread (tests call `flush`)."""
        self._flush_seconds = flush_seconds
        self._lock = threading.Lock()
        self._pending: dict[MinuteKey, StatisticSet] = {}
        self._thread_started = not background

    def record(self, load: ModelLoad) -> None:
        now_ms = int(time.time() * 1000)
        dimensions = (("EndpointName", load.endpoint_name), ("VariantName", load.variant_name))
        values = [
            ("ModelCacheHit", COUNT, float(load.hit)),
            ("ModelLoadedCount", COUNT, float(load.loaded_count)),
        ]
        if not load.hit:
            values.append(("ModelLoadingWaitTime", MICROSECONDS, load.wait_seconds * 1e6))
        with self._lock:
            for metric, unit, value in values:
                key = MinuteKey(load.ctx.account_id, load.ctx.region, NAMESPACE, metric, dimensions, unit,
                                now_ms - now_ms % 60_000)
                known = self._pending.get(key)
                self._pending[key] = _one(value) if known is None else _sum(known, _one(value))
            if not self._thread_started:
                self._thread_started = True
                threading.Thread(target=self._flush_forever, name="model-metrics", daemon=True).start()

    def flush(self) -> None:
        with self._lock:
            taken, self._pending = self._pending, {}
        try:
            if taken:
                add_statistic_sets(taken)
        except DatabaseError:
            with self._lock:
                for key, kept in taken.items():
                    newer = self._pending.get(key)
                    self._pending[key] = kept if newer is None else _sum(kept, newer)

    def _flush_forever(self) -> None:
        flush_forever(self.flush, self._flush_seconds, "multi-model metrics")


_metrics: ModelMetrics | None = None
_metrics_lock = threading.Lock()


def get_model_metrics() -> ModelMetrics:
    global _metrics
    with _metrics_lock:
        if _metrics is None:
            _metrics = ModelMetrics(settings.SAGEPORT_INVOCATION_METRICS_FLUSH_SECONDS)
        return _metrics
