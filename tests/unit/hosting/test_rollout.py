"""The traffic plan of blue/green updates, from their DeploymentConfig."""

from datetime import UTC, datetime, timedelta

import pytest

from hosting.rollout import execution_deadline, share_percent, termination_wait, traffic_steps


def policy(routing: dict, **extra) -> dict:
    return {"BlueGreenUpdatePolicy": {"TrafficRoutingConfiguration": routing, **extra}}


def test_without_a_deployment_config_all_traffic_moves_at_once_with_no_waits():
    assert traffic_steps({}, 4) == [100.0]
    assert termination_wait({}) == timedelta(0)
    assert execution_deadline({}, datetime(2026, 1, 1, tzinfo=UTC)) is None


def test_a_canary_takes_its_share_of_the_new_fleet_then_everything():
    canary = policy(
        {"Type": "CANARY", "WaitIntervalInSeconds": 5, "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1}}
    )
    assert traffic_steps(canary, 4) == [25.0, 100.0]


def test_a_canary_as_large_as_the_fleet_is_one_step():
    canary = policy(
        {"Type": "CANARY", "WaitIntervalInSeconds": 5, "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 9}}
    )
    assert traffic_steps(canary, 2) == [100.0]


def test_linear_steps_grow_by_whole_instances_until_everything_moved():
    by_count = policy(
        {
            "Type": "LINEAR",
            "WaitIntervalInSeconds": 1,
            "LinearStepSize": {"Type": "INSTANCE_COUNT", "Value": 1},
        }
    )
    assert traffic_steps(by_count, 3) == pytest.approx([100 / 3, 200 / 3, 100.0])
    by_percent = policy(
        {
            "Type": "LINEAR",
            "WaitIntervalInSeconds": 1,
            "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 30},
        }
    )
    assert traffic_steps(by_percent, 10) == [30.0, 60.0, 90.0, 100.0]


@pytest.mark.parametrize(
    ("value", "fleet", "percent"), [(10, 4, 25.0), (50, 4, 50.0), (51, 4, 75.0), (100, 3, 100.0)]
)
def test_a_capacity_percentage_rounds_up_to_whole_instances_of_at_least_one(value, fleet, percent):
    assert share_percent({"Type": "CAPACITY_PERCENT", "Value": value}, fleet) == percent


def test_termination_wait_and_execution_deadline_come_from_the_policy():
    config = policy(
        {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0},
        TerminationWaitInSeconds=30,
        MaximumExecutionTimeoutInSeconds=600,
    )
    started = datetime(2026, 1, 1, tzinfo=UTC)
    assert termination_wait(config) == timedelta(seconds=30)
    assert execution_deadline(config, started) == started + timedelta(seconds=600)
