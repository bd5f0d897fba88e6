"""An endpoint reacts to a serving container's death when it happens, not at its next health
check: the worker follows the engine's events (reconcile/container_events.py). The worker here
looks at a steady endpoint every 60 s, and the sweeper re-enqueues only endpoints whose look is
overdue, so nothing but the event can have the container replaced within the bounded wait."""

import docker
import pytest

from tests.e2e.hosting import invoke_json, wait_until
from tests.e2e.test_container_events import POLL_SECONDS, WITHIN, worker_with

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # hosting, runtime, probe_image


@pytest.fixture(scope="module")
def slow_health_checking_worker(stack):
    with worker_with(stack, SAGEPORT_HEALTH_CHECK_INTERVAL_SECONDS=str(POLL_SECONDS)):
        yield


def test_a_dead_serving_container_is_replaced_when_it_dies(
    slow_health_checking_worker, sagemaker, runtime, probe_image, hosting
):
    name = hosting.probe_endpoint(probe_image)  # InService: steady, its next look 60 s away
    arn = sagemaker.describe_endpoint(EndpointName=name)["EndpointArn"]
    victim = docker.from_env().containers.list(filters={"label": f"sageport.resource={arn}"})[0]
    assert invoke_json(runtime, name)["hostname"] == victim.id[:12]

    victim.kill()

    def answered_by_a_replacement() -> bool:
        try:
            return invoke_json(runtime, name)["hostname"] != victim.id[:12]
        except runtime.exceptions.ClientError:  # nothing serves until the replacement is healthy
            return False

    wait_until(answered_by_a_replacement, timeout=WITHIN, what="a replacement container")
