"""What the elastic bench reads and prints: the job's status, the training records, the agents'
transitions (their graceful stops), and the medians with each time over its resize's stop."""

import hashlib
import math
from datetime import UTC, datetime

import pytest

from bench.elastic import (
    BREAKDOWN,
    GROW_NEW_AGENTS,
    GROW_REACTION,
    GROW_REFORM,
    GROW_RUNNING,
    GROW_STEP,
    GROW_STOP,
    ORDER,
    SHRINK_STOP,
    URGENT_RUNNING,
    URGENT_STEP,
    condition,
    first_step_time,
    graceful_stop_seconds,
    growth_breakdown,
    manifest,
    read_records,
    report,
    running_size,
    stack_id,
    summarize,
)


def iso(epoch: float) -> str:
    """As the agent writes its transitions: datetime.now(timezone.utc).isoformat()."""
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def test_a_job_runs_at_its_current_replicas_only_while_its_newest_true_condition_is_running():
    status = {
        "conditions": [
            {"type": "Created", "status": "True"},
            {"type": "Running", "status": "True"},
        ],
        "jobPods": [{"kind": "Pod", "name": f"job-pods-{index}"} for index in range(4)],
    }
    assert condition(status) == "Running"
    assert running_size(status) == 4
    restarting = {**status, "conditions": [*status["conditions"], {"type": "Restarting", "status": "True"}]}
    assert running_size(restarting) == 0
    past = {**status, "conditions": [{"type": "Running", "status": "False"}]}
    assert condition(past) == ""
    assert running_size({}) == 0


def test_the_first_step_at_a_size_is_the_earliest_trained_one_since_the_moment_given():
    records = [
        {"event": "started", "world_size": 4, "time": 5.0},  # no samples: not a trained step
        {"step": 1, "world_size": 1, "samples": [0], "time": 6.0},
        {"step": 2, "world_size": 4, "samples": [1], "time": 9.0},
        {"step": 3, "world_size": 4, "samples": [2], "time": 8.0},  # another rank's file, earlier
        {"step": 0, "world_size": 4, "samples": [3], "time": 3.0},  # an older world at 4
    ]
    assert first_step_time(records, 4, since=7.0) == 8.0
    assert first_step_time(records, 1, since=0) == 6.0
    assert first_step_time(records, 2, since=0) is None


def test_the_graceful_stop_is_the_slowest_agent_that_stopped_after_the_moment_and_is_ready_again():
    agents = {
        "rank-0": {"INIT": iso(1), "READY": iso(104.5), "RUNNING": iso(106), "STOPPING": iso(100)},
        "rank-1": {"INIT": iso(1), "READY": iso(107.25), "STOPPING": iso(101)},  # slowest: 6.25 s
        "rank-2": {"INIT": iso(1), "READY": iso(2), "RUNNING": iso(3), "STOPPING": iso(102)},  # stopping
        "fresh": {"INIT": iso(103), "READY": iso(104), "RUNNING": iso(105)},  # never stopped
        "earlier": {"READY": iso(60), "STOPPING": iso(50)},  # a previous resize's stop
    }
    assert graceful_stop_seconds(agents, since=99) == pytest.approx(6.25)
    assert graceful_stop_seconds(agents, since=100.5) == pytest.approx(6.25)
    assert graceful_stop_seconds(agents, since=40) == pytest.approx(10.0)
    assert graceful_stop_seconds({"fresh": agents["fresh"]}, since=0) is None


def test_the_growth_is_broken_down_from_the_agents_transitions():
    freed, running = 1000.0, 1007.0
    transitions = {
        "old-round-pod": {"INIT": iso(900.0), "READY": iso(950.0), "STOPPING": iso(940.0)},
        "pod-0": {"INIT": iso(800.0), "STOPPING": iso(1002.0), "READY": iso(1004.5), "RUNNING": iso(1006.9)},
        "pod-1": {"INIT": iso(1005.5), "READY": iso(1005.6), "RUNNING": iso(1006.9)},
        "pod-2": {"INIT": iso(1006.0), "READY": iso(1006.1), "RUNNING": iso(1006.9)},
    }
    parts = growth_breakdown(transitions, freed, running)
    assert parts[GROW_REACTION] == pytest.approx(2.0)  # freed → the first stop
    assert parts[GROW_NEW_AGENTS] == pytest.approx(6.0)  # freed → the last new agent up
    assert parts[GROW_REFORM] == pytest.approx(0.9)  # the last agent ready → Running seen
    summary = summarize([{what: 1.0 for what in ORDER} | parts])
    assert all(part in summary for part in BREAKDOWN)
    assert "of which: freed → the stop sent" in report(summary, 1)


def test_the_summary_gives_medians_and_each_time_over_its_resize_stop():
    rounds = [
        {GROW_RUNNING: 10.0, GROW_STEP: 20.0, GROW_STOP: 2.0, URGENT_RUNNING: 12.0, URGENT_STEP: 30.0,
         SHRINK_STOP: 3.0},
        {GROW_RUNNING: 14.0, GROW_STEP: 24.0, GROW_STOP: 4.0, URGENT_RUNNING: 18.0, URGENT_STEP: 36.0,
         SHRINK_STOP: 6.0},
        {GROW_RUNNING: 11.0, GROW_STEP: 22.0, GROW_STOP: 2.5, URGENT_RUNNING: 15.0, URGENT_STEP: 33.0,
         SHRINK_STOP: 5.0},
    ]
    summary = summarize(rounds)
    assert [summary[what] for what in ORDER] == [11.0, 22.0, 2.5, 15.0, 33.0, 5.0]
    assert summary[f"{GROW_RUNNING} / stop"] == pytest.approx(4.4)
    assert summary[f"{GROW_STEP} / stop"] == pytest.approx(8.8)
    assert summary[f"{URGENT_RUNNING} / stop"] == pytest.approx(3.0)
    assert summary[f"{URGENT_STEP} / stop"] == pytest.approx(6.6)
    printed = report(summary, 3)
    assert "4.4x" in printed and "3.0x" in printed
    assert printed.splitlines()[-1].startswith("summary: capacity freed → running at 4 in 11.0 s")


def test_a_zero_stop_gives_nan_rather_than_dividing_by_zero():
    row = {what: 1.0 for what in ORDER} | {GROW_STOP: 0.0}
    assert math.isnan(summarize([row])[f"{GROW_RUNNING} / stop"])


def test_records_are_read_from_every_rank_file_and_a_line_being_written_is_skipped(tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    (folder / "rank-0-restart-0-7.jsonl").write_text('{"step": 0, "time": 1.0}\n{"step": 1, "ti')
    (folder / "rank-1-restart-0-8.jsonl").write_text('{"step": 0, "time": 1.5}\n')
    assert read_records(tmp_path) == [{"step": 0, "time": 1.0}, {"step": 0, "time": 1.5}]
    assert read_records(tmp_path / "missing") == []


def test_the_stack_id_is_the_variable_or_derived_from_the_data_dir_as_the_stack_does(tmp_path, monkeypatch):
    monkeypatch.delenv("SAGEPORT_STACK_ID", raising=False)
    # controlplane/settings.py: the first 12 hex digits of the SHA-256 of the absolute data dir
    assert stack_id(tmp_path) == hashlib.sha256(str(tmp_path.resolve()).encode()).hexdigest()[:12]
    monkeypatch.setenv("SAGEPORT_STACK_ID", "given")
    assert stack_id(tmp_path) == "given"


def test_the_jobs_are_elastic_or_fixed_with_their_priority_and_shared_claim():
    elastic = manifest("grow", "claim-a", 1, "low", elastic={"minReplicas": 1, "maxReplicas": 4})
    group = elastic["spec"]["replicaSpecs"][0]
    assert (group["replicas"], group["maxReplicas"]) == (1, 4)
    assert elastic["metadata"]["labels"] == {"kueue.x-k8s.io/priority-class": "low"}
    assert group["template"]["spec"]["volumes"][0]["persistentVolumeClaim"] == {"claimName": "claim-a"}
    fixed = manifest("urgent", "claim-b", 2, "high")
    assert "elasticPolicy" not in fixed["spec"]
    assert fixed["spec"]["replicaSpecs"][0]["maxReplicas"] == 2
