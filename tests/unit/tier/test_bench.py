"""bench/tier.py's summary: medians of each step's throughput (not the throughput of the median
time) and the ratios docs/hyperpod.md quotes."""

import pytest

from bench.tier import DISK, MIB, S3, TIER, summarize


def test_the_summary_takes_medians_of_throughput_and_divides_them():
    seconds = {
        (TIER, "write"): [1.0, 4.0], (S3, "write"): [8.0, 8.0], (DISK, "write"): [2.0, 2.0],
        (TIER, "read"): [0.5, 0.5, 2.0], (S3, "read"): [1.0, 1.0, 1.0], (DISK, "read"): [0.25, 0.25, 0.25],
        (TIER, "resume"): [0.2, 0.1, 0.3], (S3, "resume"): [0.9, 0.6, 3.0],
    }
    summary = summarize(seconds, step_bytes=100 * MIB)
    assert summary[f"{TIER} write MiB/s"] == pytest.approx(62.5)  # (100 + 25) / 2, not 100 / 2.5
    assert summary[f"{S3} write MiB/s"] == pytest.approx(12.5)
    assert summary["write RAM/S3"] == pytest.approx(5.0)
    assert summary[f"write RAM/{DISK}"] == pytest.approx(1.25)
    assert summary["read RAM/S3"] == pytest.approx(2.0)
    assert summary[f"read RAM/{DISK}"] == pytest.approx(0.5)
    assert summary[f"{S3} resume s"] == pytest.approx(0.9)
    assert summary["resume S3/RAM"] == pytest.approx(4.5)
