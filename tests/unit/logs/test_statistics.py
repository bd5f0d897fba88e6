"""CloudWatch statistics over samples, without a database."""

import pytest

from logs import histograms
from logs.statistics import Aggregate, Sample, aligned_start_ms, by_period, is_supported, percentile_rank


def aggregate(*samples):
    total = Aggregate()
    for sample in samples:
        total.add(sample)
    return total


def test_basic_statistics_of_points():
    points = aggregate(*(Sample.point(0, value) for value in (4.0, 1.0, 7.0)))

    assert [points.statistic(name) for name in ("SampleCount", "Sum", "Average", "Minimum", "Maximum")] == [
        3,
        12.0,
        4.0,
        1.0,
        7.0,
    ]


@pytest.mark.parametrize(
    ("name", "expected"), [("p0", 1.0), ("p50", 50.0), ("p90", 90.0), ("p99.5", 100.0), ("p100", 100.0)]
)
def test_percentiles_are_nearest_rank(name, expected):
    values = aggregate(*(Sample.point(0, float(value)) for value in range(100, 0, -1)))

    assert values.statistic(name) == expected


def latency_minute(timestamp_ms: int, values: list[float]) -> Sample:
    """A minute published as a statistic set with the histogram of its values."""
    spread = histograms.of(values)
    return Sample(timestamp_ms, len(values), sum(values), min(values), max(values), None, spread)


def test_percentiles_of_statistic_sets_come_from_their_histograms():
    first = [1000.0 + 10 * index for index in range(60)]  # 1000..1590
    second = [3000.0 + 100 * index for index in range(40)]  # 3000..6900
    minutes = aggregate(latency_minute(0, first), latency_minute(60_000, second))

    ordered = sorted(first + second)
    assert minutes.statistic("p50") == pytest.approx(ordered[49], rel=histograms.RELATIVE_ERROR)
    assert minutes.statistic("p99") == pytest.approx(ordered[98], rel=histograms.RELATIVE_ERROR)
    assert minutes.statistic("p100") == 6900.0
    assert minutes.statistic("SampleCount") == 100


def test_a_period_with_a_set_without_histogram_has_no_percentile():
    minutes = aggregate(latency_minute(0, [1.0, 2.0]), Sample(60_000, 3, 30.0, 5.0, 15.0, None))

    assert minutes.statistic("p50") is None


def test_statistic_sets_add_up_but_have_no_percentiles():
    minutes = aggregate(Sample(0, 3, 30.0, 5.0, 15.0, None), Sample.point(1, 2.0))

    assert (minutes.statistic("SampleCount"), minutes.statistic("Average")) == (4, 8.0)
    assert (minutes.statistic("Minimum"), minutes.statistic("Maximum")) == (2.0, 15.0)
    assert minutes.statistic("p50") is None


def test_only_cloudwatchs_statistic_names_are_supported():
    assert [
        is_supported(name) for name in ("Average", "p99.99", "p100", "p101", "tm99", "P50", "p9.999")
    ] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    assert percentile_rank("p99.9") == 99.9


def test_periods_start_at_the_minute_of_start_time_and_leave_out_empty_ones():
    start = aligned_start_ms(125_500, 60)
    periods = by_period(
        [Sample.point(130_000, 1.0), Sample.point(300_000, 2.0), Sample.point(150_000, 3.0)], start, 60
    )

    assert start == 120_000
    assert {begins: aggregate.count for begins, aggregate in periods.items()} == {120_000: 2, 300_000: 1}
    assert aligned_start_ms(125_500, 10) == 125_000
