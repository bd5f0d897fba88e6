"""Percentiles of metrics published per minute (an endpoint variant's latencies), from a histogram
kept beside the minute's count, sum, minimum and maximum (pure: no database).

Why a histogram: the values themselves are what nearest-rank percentiles need, but a busy
endpoint makes thousands of invocations a minute, and every API process adds its own minutes up
before writing them (hosting/runtime_api/invocation_metrics.py), so the stored minute must merge
by adding and stay small. Buckets whose bounds grow geometrically (the DDSketch scheme) do both:
bucket `i` holds the values in (GAMMA^(i-1), GAMMA^i], and its representative value is within
RELATIVE_ERROR of every value in it. A percentile is the representative of the bucket holding
the nearest-rank value, so it is that value to within 1% (and never outside the minute's minimum
and maximum, which are exact, as are p0 and p100). Merging adds counts bucket by bucket. The
number of buckets is bounded by the spread of the values, not their count: one per 2% of growth,
at most MAX_INDEX + 1 (values from 1 to 10^12, e.g. microseconds up to 11 days; values outside
go to the end buckets), in practice a few hundred for latencies from 1 ms to 10 s."""

import math
from collections.abc import Iterable, Mapping

RELATIVE_ERROR = 0.01
GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
_LOG_GAMMA = math.log(GAMMA)
SMALLEST = 1.0  # values up to this share bucket 0
MAX_INDEX = math.ceil(math.log(1e12) / _LOG_GAMMA)

Histogram = dict[int, float]  # bucket index -> how many values fell in it


def bucket(value: float) -> int:
    if value <= SMALLEST:
        return 0
    return min(math.ceil(math.log(value) / _LOG_GAMMA), MAX_INDEX)


def of(values: Iterable[float]) -> Histogram:
    histogram: Histogram = {}
    for value in values:
        index = bucket(value)
        histogram[index] = histogram.get(index, 0) + 1
    return histogram


def merge(into: Histogram, other: Mapping[int, float]) -> None:
    for index, count in other.items():
        into[index] = into.get(index, 0) + count


def percentile(histogram: Mapping[int, float], rank: float, minimum: float, maximum: float) -> float | None:
    """The nearest-rank `rank` percentile (0-100) of the values counted, within RELATIVE_ERROR;
    `minimum` and `maximum` are the values' exact extremes."""
    total = sum(histogram.values())
    if total <= 0:
        return None
    position = max(math.ceil(rank / 100 * total), 1)
    if position == 1:
        return minimum
    if position >= total:
        return maximum
    seen = 0.0
    for index in sorted(histogram):
        seen += histogram[index]
        if seen >= position:
            representative = 2 * GAMMA**index / (GAMMA + 1)
            return min(max(representative, minimum), maximum)
    return maximum  # not reached: the counts add up to `total`
