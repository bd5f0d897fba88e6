"""The traffic plan of a blue/green update, from its DeploymentConfig (pure decisions).

Once the new fleet is healthy, traffic moves to it in steps: ALL_AT_ONCE in one; CANARY first
the canary's share of the new fleet's capacity, then the rest after WaitIntervalInSeconds;
LINEAR one LinearStepSize more every WaitIntervalInSeconds. With everything shifted, the old
fleet keeps running for TerminationWaitInSeconds (the baking period), then it is drained and
stopped. MaximumExecutionTimeoutInSeconds bounds the whole update; past it, the update is
rolled back. No DeploymentConfig means all at once, with no waits."""

import math
from datetime import datetime, timedelta

FULL = 100.0


def _policy(deployment_config: dict) -> dict:
    return deployment_config.get("BlueGreenUpdatePolicy", {})


def _routing(deployment_config: dict) -> dict:
    return _policy(deployment_config).get("TrafficRoutingConfiguration", {"Type": "ALL_AT_ONCE"})


def share_percent(size: dict, total_instances: int) -> float:
    """A CapacitySize as a percentage of the new fleet (whole instances, at least one)."""
    if size["Type"] == "CAPACITY_PERCENT":
        instances = math.ceil(total_instances * size["Value"] / 100)
    else:
        instances = size["Value"]
    return min(FULL, 100.0 * max(1, instances) / total_instances)


def traffic_steps(deployment_config: dict, total_instances: int) -> list[float]:
    """The percentages of traffic the new fleet gets, step after step; the last is 100."""
    routing = _routing(deployment_config)
    if routing["Type"] == "CANARY":
        canary = share_percent(routing["CanarySize"], total_instances)
        return [canary, FULL] if canary < FULL else [FULL]
    if routing["Type"] == "LINEAR":
        step = share_percent(routing["LinearStepSize"], total_instances)
        count = math.ceil(FULL / step)
        return [min(FULL, step * index) for index in range(1, count + 1)]
    return [FULL]


def wait_interval(deployment_config: dict) -> timedelta:
    return timedelta(seconds=_routing(deployment_config).get("WaitIntervalInSeconds", 0))


def termination_wait(deployment_config: dict) -> timedelta:
    return timedelta(seconds=_policy(deployment_config).get("TerminationWaitInSeconds", 0))


def execution_deadline(deployment_config: dict, started: datetime) -> datetime | None:
    limit = _policy(deployment_config).get("MaximumExecutionTimeoutInSeconds")
    return started + timedelta(seconds=limit) if limit else None

