"""What the staging bench reads and prints: a phase's seconds from the job's
SecondaryStatusTransitions, the medians and the ratios against boto3's transfers."""

from datetime import UTC, datetime, timedelta

import pytest

from bench.staging import DOWNLOAD, PACK, STAGE, UPLOAD, phase_seconds, report, summarize

START = datetime(2026, 11, 24, 1, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


TRANSITIONS = [
    {"Status": "Starting", "StartTime": at(0), "EndTime": at(0.4)},
    {"Status": "Downloading", "StartTime": at(0.4), "EndTime": at(1.65)},
    {"Status": "Training", "StartTime": at(1.65), "EndTime": at(3.0)},
    {"Status": "Uploading", "StartTime": at(3.0), "EndTime": at(5.125)},
    {"Status": "Completed", "StartTime": at(5.125)},
]


def test_a_phase_lasts_from_its_start_to_its_end():
    assert phase_seconds(TRANSITIONS, "Downloading") == pytest.approx(1.25)
    assert phase_seconds(TRANSITIONS, "Uploading") == pytest.approx(2.125)


def test_a_phase_never_entered_or_never_ended_stops_the_bench():
    with pytest.raises(RuntimeError, match="never went through Stopping"):
        phase_seconds(TRANSITIONS, "Stopping")
    with pytest.raises(RuntimeError, match="Completed phase has no end"):
        phase_seconds(TRANSITIONS, "Completed")


def test_the_summary_compares_the_medians_with_boto3s_transfers():
    summary = summarize({
        STAGE: [1.0, 3.0, 2.0], DOWNLOAD: [4.0, 4.0, 9.0], PACK: [6.0, 5.0, 7.0], UPLOAD: [2.0, 2.5, 3.0],
    })
    assert summary[STAGE] == 2.0 and summary[DOWNLOAD] == 4.0
    assert summary[f"{STAGE} / {DOWNLOAD}"] == pytest.approx(0.5)
    assert summary[f"{PACK} / {UPLOAD}"] == pytest.approx(2.4)
    lines = report(summary, 3, (64 << 20, 1 << 20)).splitlines()
    assert lines[0].startswith("3 rounds of 65 MiB")
    assert lines[-1] == ("summary: S3 → channel 2.00 s = 0.50x boto3 download (4.00 s); "
                         "model → S3 (tar.gz) 6.00 s = 2.40x boto3 upload (2.50 s)")
