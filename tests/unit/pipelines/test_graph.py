"""Which steps start when: dependencies by data and DependsOn, a Condition's branches, and a
failure that stops what depends on it."""

import json

from pipelines import definition, graph
from tests.unit.pipelines import sample


def plan(statuses, outcomes=None):
    return graph.plan(definition.parse(sample.text()), statuses, outcomes or {})


def test_only_steps_without_dependencies_start_first():
    assert plan({}) == {
        "Prepare": "Ready",
        "Train": "Waiting",
        "Check": "Waiting",
        "Register-RegisterModel": "Waiting",
        "TooLow": "Waiting",
    }


def test_the_steps_reading_a_step_start_once_it_succeeded():
    found = plan({"Prepare": "Succeeded"})
    assert found["Train"] == found["Check"] == "Ready"


def test_a_condition_runs_its_branch_and_never_the_other():
    done = {"Prepare": "Succeeded", "Train": "Succeeded", "Check": "Succeeded"}
    assert plan(done, {"Check": True}) == {"Register-RegisterModel": "Ready", "TooLow": "Never"}
    assert plan(done, {"Check": False}) == {"Register-RegisterModel": "Never", "TooLow": "Ready"}


def test_what_depends_on_a_failed_step_never_runs():
    assert plan({"Prepare": "Failed"})["Train"] == "Never"


def test_depends_on_orders_steps_that_share_no_data():
    document = sample.document(
        Steps=[
            {"Name": "A", "Type": "Fail", "Arguments": {}},
            {"Name": "B", "Type": "Fail", "Arguments": {}, "DependsOn": ["A"]},
        ]
    )
    parsed = definition.parse(json.dumps(document))
    assert graph.plan(parsed, {}, {}) == {"A": "Ready", "B": "Waiting"}
    assert graph.plan(parsed, {"A": "Executing"}, {}) == {"B": "Waiting"}
