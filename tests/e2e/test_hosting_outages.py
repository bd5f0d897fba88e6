"""InvokeEndpoint keeps answering from the data plane's last routing table while Redis is away:
the data path never waits on the broker."""

import signal
import time
from pathlib import Path

import kombu.exceptions
import pytest
import redis
from django.conf import settings

from controlplane.celery import app as celery_app
from devstack.stack import redis_spec
from tests.e2e.hosting import invoke_json, wait_until

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # hosting, runtime, serve_image, probe_image

REQUESTS = 20
PAUSE_SECONDS = 0.25  # 20 requests span 5 s: longer than any Redis timeout or refresh period


@pytest.fixture
def endpoint_name(hosting, probe_image, runtime):
    name = hosting.probe_endpoint(probe_image)
    assert invoke_json(runtime, name)["tag"] == "blue"  # the data plane has loaded its table
    return name


def worker_answers() -> bool:
    try:
        return bool(celery_app.control.ping(timeout=0.5))
    except (kombu.exceptions.OperationalError, redis.RedisError, OSError):
        return False


def invoke_repeatedly(runtime, name: str) -> list[str]:
    tags = []
    for _ in range(REQUESTS):
        tags.append(invoke_json(runtime, name)["tag"])
        time.sleep(PAUSE_SECONDS)
    return tags


def test_invoke_endpoint_answers_while_redis_is_stopped(stack, runtime, endpoint_name):
    stack.supervisor.stop("redis")
    try:
        tags = invoke_repeatedly(runtime, endpoint_name)
    finally:
        stack.supervisor.start(redis_spec(Path(settings.DATA_DIR), settings.CELERY_BROKER_URL))
        # Later tests need the worker back on the new Redis (and this process's pooled broker
        # connection, broken by the restart, fails once before it reconnects).
        wait_until(worker_answers, timeout=60, what="the worker reconnects to Redis")

    assert tags == ["blue"] * REQUESTS


def test_invoke_endpoint_answers_while_redis_hangs(stack, runtime, endpoint_name):
    """A Redis that accepts connections but never answers (SIGSTOP) must not stall requests."""
    stack.supervisor.signal("redis", signal.SIGSTOP)
    try:
        tags = invoke_repeatedly(runtime, endpoint_name)
    finally:
        stack.supervisor.signal("redis", signal.SIGCONT)

    assert tags == ["blue"] * REQUESTS
