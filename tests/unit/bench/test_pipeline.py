"""The pipeline bench's figures: the critical path through the steps, the overhead against the
wall time, and where along the path it went."""

import json

import pytest

from bench.pipeline import PARENTS, critical_path, definition, gaps, measure
from pipelines.definition import parse


def test_the_critical_path_is_the_longest_chain_of_dependent_steps():
    parents = {"Prepare": [], "Fast": ["Prepare"], "Slow": ["Prepare"], "Score": ["Fast", "Slow"]}
    seconds = {"Prepare": 1.0, "Fast": 0.5, "Slow": 3.0, "Score": 1.0}
    assert critical_path(seconds, parents) == ["Prepare", "Slow", "Score"]
    assert critical_path({**seconds, "Fast": 4.0}, parents) == ["Prepare", "Fast", "Score"]


def test_the_overhead_is_the_wall_time_less_the_paths_job_times_and_the_gaps_add_up_to_it():
    times = {  # seconds after the execution's start
        "Prepare": {"created": 0.1, "began": 0.2, "ended": 1.1},
        "Train": {"created": 2.1, "began": 2.3, "ended": 3.1},
        "Model-CreateModel": {"created": 4.0, "began": 4.0, "ended": 4.05},
        "Score": {"created": 4.1, "began": 4.2, "ended": 5.6},
    }
    run = measure(6.0, times)
    assert run["path"] == ["Prepare", "Train", "Model-CreateModel", "Score"]
    assert run["path_own"] == pytest.approx(1.0 + 1.0 + 0.05 + 1.5)
    assert run["path_running"] == pytest.approx(0.9 + 0.8 + 0.05 + 1.4)
    assert run["overhead"] == pytest.approx(6.0 - 3.55)
    assert run["per_step"] == pytest.approx((6.0 - 3.55) / 4)
    assert run["gaps"] == pytest.approx(
        {"→ Prepare": 0.1, "→ Train": 1.0, "→ Model-CreateModel": 0.9, "→ Score": 0.05, "→ Succeeded": 0.4}
    )
    assert sum(run["gaps"].values()) == pytest.approx(run["overhead"])
    assert gaps(6.0, ["Prepare"], times) == pytest.approx({"→ Prepare": 0.1, "→ Succeeded": 4.9})


def test_the_benchs_pipeline_is_a_definition_sageport_accepts_whose_steps_read_their_parents():
    parsed = parse(json.dumps(definition("bkt")))
    assert list(parsed.steps) == list(PARENTS)
    for name, step in parsed.steps.items():
        assert sorted(step.dependencies) == sorted(PARENTS[name])
