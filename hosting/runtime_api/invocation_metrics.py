"""The endpoint metrics SageMaker publishes to CloudWatch (`AWS/SageMaker`, dimensions
`EndpointName` and `VariantName`, or `InferenceComponentName` alone for a request routed to an
inference component's copies): Invocations, Invocation4XXErrors and Invocation5XXErrors (the
model's answer was a 4xx, or a 5xx or none), ModelLatency (the container's exchange) and
OverheadLatency (the rest of the request), both in microseconds, with a histogram of each
minute's latencies (logs/histograms.py) so that CloudWatch's percentiles (p50, p99) have values.

InvokeEndpoint's hot path pays one lock and a few additions: each API process adds its
invocations up per endpoint variant and minute in memory, and a background thread writes the sums
(`logs.metrics.add_statistic_sets`) every `SAGEPORT_INVOCATION_METRICS_FLUSH_SECONDS` and when
the process exits normally. A process that crashes loses at most the last interval's counts; a
write that fails (the database away) is kept and tried again at the next flush."""

import logging
import multiprocessing.util
import threading
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from django.conf import settings
from django.db import DatabaseError, close_old_connections

from logs import histograms
from logs.metrics import MinuteKey, StatisticSet, add_statistic_sets

log = logging.getLogger(__name__)

NAMESPACE = "AWS/SageMaker"
MICROSECONDS = "Microseconds"
COUNT = "None"  # CloudWatch's unit of a plain count


class Invocation(NamedTuple):
    """One request that reached a container (or tried to): who, where, and how the model did."""

    account_id: str
    region: str
    endpoint_name: str
    variant_name: str
    model_seconds: float
    model_status: int  # the container's HTTP status; 0 when it gave no answer
    inference_component: str = ""  # the component the request named, if any


@dataclass
class _Minute:
    """Running sums of one endpoint variant's invocations in one minute."""

    count: int = 0
    errors_4xx: int = 0
    errors_5xx: int = 0
    model_total: float = 0.0
    model_min: float = float("inf")
    model_max: float = 0.0
    overhead_total: float = 0.0
    overhead_min: float = float("inf")
    overhead_max: float = 0.0
    model_histogram: histograms.Histogram = field(default_factory=dict)
    overhead_histogram: histograms.Histogram = field(default_factory=dict)

    @classmethod
    def one(cls, model_us: float, overhead_us: float, status: int) -> "_Minute":
        return cls(
            count=1,
            errors_4xx=int(400 <= status < 500),
            errors_5xx=int(status >= 500 or status == 0),
            model_total=model_us,
            model_min=model_us,
            model_max=model_us,
            overhead_total=overhead_us,
            overhead_min=overhead_us,
            overhead_max=overhead_us,
            model_histogram=histograms.of([model_us]),
            overhead_histogram=histograms.of([overhead_us]),
        )

    def merge(self, other: "_Minute") -> None:
        self.count += other.count
        self.errors_4xx += other.errors_4xx
        self.errors_5xx += other.errors_5xx
        self.model_total += other.model_total
        self.model_min = min(self.model_min, other.model_min)
        self.model_max = max(self.model_max, other.model_max)
        self.overhead_total += other.overhead_total
        self.overhead_min = min(self.overhead_min, other.overhead_min)
        self.overhead_max = max(self.overhead_max, other.overhead_max)
        histograms.merge(self.model_histogram, other.model_histogram)
        histograms.merge(self.overhead_histogram, other.overhead_histogram)

    def statistic_sets(self) -> dict[tuple[str, str], StatisticSet]:
        """(metric name, unit) → its statistic set. Error metrics count 1 per failed invocation
        and 0 per other one, so that their Average is the error rate, as in SageMaker."""
        n = self.count
        return {
            ("Invocations", COUNT): StatisticSet(n, n, 1, 1),
            ("Invocation4XXErrors", COUNT): _rate(n, self.errors_4xx),
            ("Invocation5XXErrors", COUNT): _rate(n, self.errors_5xx),
            ("ModelLatency", MICROSECONDS): StatisticSet(
                n, self.model_total, self.model_min, self.model_max, dict(self.model_histogram)
            ),
            ("OverheadLatency", MICROSECONDS): StatisticSet(
                n, self.overhead_total, self.overhead_min, self.overhead_max, dict(self.overhead_histogram)
            ),
        }


def _rate(count: int, failed: int) -> StatisticSet:
    return StatisticSet(count, failed, 0 if failed < count else 1, 1 if failed else 0)


# (account, region, endpoint, variant, inference component, minute start ms)
_Key = tuple[str, str, str, str, str, int]


class InvocationMetrics:
    """One per process (`get_metrics()`); the flush thread starts with the first invocation, so
    that it runs in the serving process (not in a server's main process, which forks them)."""

    def __init__(self, flush_seconds: float, *, background: bool = True):
        """`background=False`: no flush thread and no flush at exit (tests call `flush`)."""
        self._flush_seconds = flush_seconds
        self._lock = threading.Lock()
        self._minutes: dict[_Key, _Minute] = {}
        self._started = not background

    def record(self, invocation: Invocation, total_seconds: float) -> None:
        model_us = invocation.model_seconds * 1e6
        overhead_us = max(total_seconds - invocation.model_seconds, 0.0) * 1e6
        now_ms = int(time.time() * 1000)
        key = (*invocation[:4], invocation.inference_component, now_ms - now_ms % 60_000)
        added = _Minute.one(model_us, overhead_us, invocation.model_status)
        with self._lock:
            minute = self._minutes.get(key)
            if minute is None:
                self._minutes[key] = added
            else:
                minute.merge(added)
            if not self._started:
                self._started = True
                threading.Thread(target=self._flush_forever, name="invocation-metrics", daemon=True).start()
                # Once more at exit. Not atexit: the API's workers are multiprocessing's children
                # (granian's), which end with os._exit; multiprocessing runs its finalizers at the
                # end of its children and, through atexit, of any other process.
                multiprocessing.util.Finalize(None, self.flush, exitpriority=0)

    def flush(self) -> None:
        """Write what was added up since the last flush; on a database error keep it for the next."""
        with self._lock:
            taken, self._minutes = self._minutes, {}
        if not taken:
            return
        try:
            add_statistic_sets(_statistic_sets(taken))
        except DatabaseError as error:
            log.warning("invocation metrics not written, kept for the next flush: %s", error)
            with self._lock:
                for key, minute in taken.items():
                    self._minutes.setdefault(key, _Minute()).merge(minute)

    def _flush_forever(self) -> None:
        flush_forever(self.flush, self._flush_seconds, "invocation metrics")


def flush_forever(flush, seconds: float, what: str) -> None:
    """A flush thread's loop (also multi_model_metrics.py's)."""
    while True:
        time.sleep(seconds)
        close_old_connections()
        try:
            flush()
        except Exception:  # never let the thread die: the next interval tries again
            log.exception("%s flush failed", what)


def _statistic_sets(minutes: dict[_Key, _Minute]) -> dict[MinuteKey, StatisticSet]:
    sets = {}
    for (account_id, region, endpoint, variant, component, minute_ms), minute in minutes.items():
        dimensions = (
            (("InferenceComponentName", component),)
            if component
            else (("EndpointName", endpoint), ("VariantName", variant))
        )
        for (metric_name, unit), statistic_set in minute.statistic_sets().items():
            key = MinuteKey(account_id, region, NAMESPACE, metric_name, dimensions, unit, minute_ms)
            sets[key] = statistic_set
    return sets


_metrics: InvocationMetrics | None = None
_metrics_lock = threading.Lock()


def get_metrics() -> InvocationMetrics:
    global _metrics
    if _metrics is None:
        with _metrics_lock:
            if _metrics is None:
                _metrics = InvocationMetrics(settings.SAGEPORT_INVOCATION_METRICS_FLUSH_SECONDS)
    return _metrics
