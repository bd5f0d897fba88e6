"""Percentiles from a minute's latency histogram: within 1% of the exact nearest-rank value,
exact at the extremes, mergeable by adding, and small however many values it counts."""

import math
import random

import pytest

from logs import histograms


def exact(values: list[float], rank: float) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(rank / 100 * len(ordered)), 1) - 1]


def percentile(values: list[float], rank: float) -> float:
    return histograms.percentile(histograms.of(values), rank, min(values), max(values))


@pytest.mark.parametrize("rank", [1, 25, 50, 90, 99, 99.9])
def test_a_percentile_is_the_nearest_rank_value_within_one_percent(rank):
    generator = random.Random(7)
    values = [generator.lognormvariate(9, 1.2) for _ in range(5000)]  # microseconds: ~1 ms to ~1 s

    assert percentile(values, rank) == pytest.approx(exact(values, rank), rel=histograms.RELATIVE_ERROR)


def test_the_extremes_are_exact_and_every_percentile_lies_between_them():
    values = [1500.0, 1510.0, 2000.0, 80_000.0]

    assert (percentile(values, 0), percentile(values, 100)) == (1500.0, 80_000.0)
    assert percentile(values, 50) == pytest.approx(1510.0, rel=0.01)
    assert 1500.0 <= percentile(values, 1) <= percentile(values, 50) <= percentile(values, 99) <= 80_000.0


def test_one_value_is_every_percentile():
    assert {percentile([4321.0], rank) for rank in (0, 50, 99, 100)} == {4321.0}


def test_histograms_of_two_processes_merge_into_the_histogram_of_all_values():
    first, second = [120.0, 130.0, 9000.0], [125.0, 50_000.0]
    merged = histograms.of(first)

    histograms.merge(merged, histograms.of(second))

    assert merged == histograms.of(first + second)


def test_the_number_of_buckets_depends_on_the_spread_not_on_the_count():
    generator = random.Random(3)
    values = [generator.uniform(1_000, 10_000_000) for _ in range(100_000)]  # 1 ms to 10 s

    histogram = histograms.of(values)

    assert sum(histogram.values()) == 100_000
    assert len(histogram) <= math.ceil(math.log(10_000) / math.log(histograms.GAMMA)) + 1  # 466
    assert max(histograms.of([0.0, 1e300]).keys()) == histograms.MAX_INDEX


def test_an_empty_histogram_has_no_percentile():
    assert histograms.percentile({}, 50, math.inf, -math.inf) is None
