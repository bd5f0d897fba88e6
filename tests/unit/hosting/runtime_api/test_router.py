"""The data path's router serves from its last routing table while Redis or the database fails."""

import threading

import pytest
import redis
from django.db import OperationalError

from hosting.models import ServingContainer
from hosting.runtime_api import routing
from hosting.runtime_api.router import Router
from tests.unit.hosting.runtime_api.test_routing import ARN, container, deployment, endpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def router(monkeypatch):
    # The refresh thread is driven by hand here (router.refresh), not by a clock.
    monkeypatch.setattr(Router, "_refresh_forever", lambda self: None)
    return Router()


@pytest.fixture
def redis_down(monkeypatch):
    def fail(*args, **kwargs):
        raise redis.ConnectionError("Connection refused")

    for name in ("current_version", "publish_ack", "bump", "acks"):
        monkeypatch.setattr(routing, name, fail)


def serving_endpoint(status: str = "InService") -> None:
    owner = endpoint(status)
    container(deployment(owner, "Active", {"A": 1.0}), "A", "blue-a")


def backends(route) -> list[str]:
    return [backend.container_name for group in route.groups for backend in group.backends]


def test_requests_are_routed_while_redis_is_down(router, redis_down):
    serving_endpoint()

    route = router.route(ARN)

    assert backends(route) == ["blue-a"]


def test_without_redis_a_refresh_still_reloads_the_table_from_the_database(router, redis_down):
    serving_endpoint()
    router.route(ARN)
    ServingContainer.objects.filter(name="blue-a").update(status="Draining")

    with pytest.raises(redis.ConnectionError):
        router.refresh()

    assert backends(router.route(ARN)) == []


def test_the_last_table_is_served_while_the_database_fails(router, monkeypatch):
    serving_endpoint()
    router.route(ARN)

    def fail():
        raise OperationalError("database is locked")

    monkeypatch.setattr(routing, "load_table", fail)

    assert backends(router.route(ARN)) == ["blue-a"]
    assert router.route("arn:aws:sagemaker:us-east-1:123456789012:endpoint/unknown") is None


def test_a_routing_change_wakes_a_waiting_listener_at_once(redis_service):
    listener = routing.ChangeListener()
    listener.wait(0)  # subscribed from here on
    woke = threading.Event()
    waiting = threading.Thread(target=lambda: (listener.wait(120), woke.set()), daemon=True)
    waiting.start()

    routing.bump()

    assert woke.wait(60), "the listener slept through the announcement"
    listener.close()


def test_a_listener_without_redis_waits_out_its_period_and_never_raises(monkeypatch):
    def fail(*args, **kwargs):
        raise redis.ConnectionError("Connection refused")

    monkeypatch.setattr(routing, "_redis", fail)
    listener = routing.ChangeListener()

    listener.wait(0.05)
    listener.wait(0.05)  # and tries again
