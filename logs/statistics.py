"""CloudWatch statistics over a metric's samples, period by period (pure: no database).

A sample is what was recorded at one moment: a single point (a training metric's value), or a
published statistic set (an endpoint variant's invocations of one minute: count, sum, minimum,
maximum, and for latencies a histogram of the values). Statistics: SampleCount, Average, Sum,
Minimum, Maximum, and percentiles `pNN.NN` (nearest rank): exact over points, within 1% over
statistic sets with histograms (logs/histograms.py), and without a value over statistic sets
without one, as in CloudWatch."""

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from logs import histograms

BASIC_STATISTICS = ("SampleCount", "Average", "Sum", "Minimum", "Maximum")
_PERCENTILE = re.compile(r"^p(?P<rank>100|\d{1,2}(?:\.\d{1,2})?)$")


@dataclass(frozen=True)
class Sample:
    timestamp_ms: int
    count: float
    total: float
    minimum: float
    maximum: float
    values: tuple[float, ...] | None  # the values themselves, when known
    histogram: histograms.Histogram | None = None  # else how they spread, when known

    @classmethod
    def point(cls, timestamp_ms: int, value: float) -> "Sample":
        return cls(timestamp_ms, 1, value, value, value, (value,))


@dataclass
class Aggregate:
    """Everything recorded in one period."""

    count: float = 0
    total: float = 0
    minimum: float = math.inf
    maximum: float = -math.inf
    values: list[float] | None = field(default_factory=list)
    histogram: histograms.Histogram | None = field(default_factory=dict)

    def add(self, sample: Sample) -> None:
        self.count += sample.count
        self.total += sample.total
        self.minimum = min(self.minimum, sample.minimum)
        self.maximum = max(self.maximum, sample.maximum)
        if self.values is not None and sample.values is not None:
            self.values.extend(sample.values)
        else:
            self.values = None
        if self.histogram is not None and sample.histogram is not None:
            histograms.merge(self.histogram, sample.histogram)
        else:
            self.histogram = None

    def statistic(self, name: str) -> float | None:
        """The named statistic (a basic one or a percentile), or None when it has no value here."""
        if name == "SampleCount":
            return self.count
        if name == "Sum":
            return self.total
        if name == "Average":
            return self.total / self.count if self.count else None
        if name == "Minimum":
            return self.minimum
        if name == "Maximum":
            return self.maximum
        return self._percentile(percentile_rank(name))

    def _percentile(self, rank: float | None) -> float | None:
        if rank is None:
            return None
        if self.values:
            ordered = sorted(self.values)
            position = max(math.ceil(rank / 100 * len(ordered)), 1)
            return ordered[position - 1]
        if self.histogram:
            return histograms.percentile(self.histogram, rank, self.minimum, self.maximum)
        return None


def percentile_rank(name: str) -> float | None:
    """`p99` → 99.0, `p99.9` → 99.9; None for anything that is not a percentile."""
    match = _PERCENTILE.match(name)
    return float(match["rank"]) if match else None


def is_supported(name: str) -> bool:
    return name in BASIC_STATISTICS or percentile_rank(name) is not None


def aligned_start_ms(start_ms: int, period_seconds: int) -> int:
    """Where the first period begins: CloudWatch rounds StartTime down to the minute (to the
    second for high-resolution periods under a minute)."""
    unit = 60_000 if period_seconds >= 60 else 1000
    return start_ms - start_ms % unit


def by_period(samples: Iterable[Sample], start_ms: int, period_seconds: int) -> dict[int, Aggregate]:
    """The samples added up per period, keyed by the period's start (ms), in time order; periods
    without samples are absent, as CloudWatch leaves them out."""
    period_ms = period_seconds * 1000
    buckets: dict[int, Aggregate] = {}
    for sample in samples:
        begins = start_ms + (sample.timestamp_ms - start_ms) // period_ms * period_ms
        buckets.setdefault(begins, Aggregate()).add(sample)
    return dict(sorted(buckets.items()))
