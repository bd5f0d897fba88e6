"""The numbers the benchmarks print: percentiles of a load phase, ratios against the floor measured
in the same run, and the job lifecycle's medians."""

import math

import pytest

from bench.common import measure, ratios, summarize
from bench.job_lifecycle import COMPLETED, DOCKER, TRAINING
from bench.job_lifecycle import summarize as summarize_lifecycle


def test_a_phase_reports_completed_requests_per_second_and_its_percentiles():
    latencies = [i / 1000 for i in range(1, 101)]  # 1 ms .. 100 ms
    result = summarize(latencies, failures=3, elapsed=2.0)
    assert result["requests"] == 100
    assert result["failures"] == 3
    assert result["per_second"] == pytest.approx(50.0)  # failed requests are not throughput
    assert result["p50_ms"] == pytest.approx(50.5)
    assert result["p99_ms"] == pytest.approx(99.99)


def test_a_phase_with_one_or_no_answer_reports_what_it_has():
    assert summarize([0.004], failures=0, elapsed=1.0)["p99_ms"] == pytest.approx(4.0)
    nothing = summarize([], failures=5, elapsed=1.0)
    assert nothing["per_second"] == 0
    assert math.isnan(nothing["p50_ms"]) and math.isnan(nothing["p99_ms"])


def test_the_load_loop_stops_at_the_request_count_and_counts_failures():
    calls = []

    def call():
        calls.append(None)
        if len(calls) % 4 == 0:
            raise RuntimeError("refused")

    result = measure(call, requests=40, concurrency=4, max_seconds=30)
    assert len(calls) == 40
    assert result["failures"] == 10
    assert result["requests"] == 30


def test_the_load_loop_stops_at_its_time_limit():
    result = measure(lambda: None, requests=10**9, concurrency=2, max_seconds=0.2)
    assert 0 < result["requests"] < 10**9


def test_ratios_divide_by_the_floor_and_say_nan_rather_than_divide_by_zero():
    sageport = {"per_second": 300.0, "p50_ms": 10.0, "p99_ms": 30.0}
    moto = {"per_second": 150.0, "p50_ms": 20.0, "p99_ms": 60.0}
    assert ratios(sageport, moto) == {"throughput": 2.0, "p50": 0.5, "p99": 0.5}
    assert math.isnan(ratios(sageport, {"per_second": 0.0, "p50_ms": 1.0, "p99_ms": 1.0})["throughput"])


def test_the_lifecycle_compares_medians_with_docker_runs():
    summary = summarize_lifecycle({
        TRAINING: [0.1, 0.3, 0.2], COMPLETED: [3.0, 2.0, 9.0], DOCKER: [0.5, 0.4, 1.0],
    })
    assert summary[COMPLETED] == pytest.approx(3.0)
    assert summary[DOCKER] == pytest.approx(0.5)
    assert summary[f"{COMPLETED} / {DOCKER}"] == pytest.approx(6.0)
    assert summary[f"{TRAINING} / {DOCKER}"] == pytest.approx(0.4)
