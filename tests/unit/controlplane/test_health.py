"""/healthz and /readyz through the whole middleware chain: JSON bodies of their own (never the
AWS error page), the failing dependency named, and a probe storm answered from the cache."""
import socket

import pytest

from controlplane import health

pytestmark = pytest.mark.django_db


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


@pytest.fixture(autouse=True)
def fresh_answer(settings):
    settings.SAGEPORT_READINESS_TIMEOUT_SECONDS = 0.3
    health.forget()
    yield
    health.forget()


def test_healthz_answers_without_credentials(client):
    response = client.get("/healthz")

    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_readyz_names_the_broker_and_s3_when_they_cannot_be_reached(client, settings, monkeypatch):
    monkeypatch.setitem(health.CHECKS, "docker", lambda timeout: None)
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    settings.SAGEPORT_S3_ENDPOINT_URL = f"http://127.0.0.1:{closed_port()}"

    response = client.get("/readyz")

    assert response.status_code == 503
    assert "X-Amzn-ErrorType" not in response  # its own body, not the AWS error page
    body = response.json()
    assert body["status"] == "unavailable"
    assert set(body["failing"]) == {"broker", "s3"}
    assert "Connection" in body["failing"]["broker"]


def test_readyz_names_the_docker_engine_when_it_cannot_be_reached(client, monkeypatch):
    def unreachable(timeout):
        raise ConnectionError("Docker engine: connection refused")

    for name in ("broker", "s3"):
        monkeypatch.setitem(health.CHECKS, name, lambda timeout: None)
    monkeypatch.setitem(health.CHECKS, "docker", unreachable)

    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json()["failing"] == {"docker": "ConnectionError: Docker engine: connection refused"}


def test_readyz_is_ready_when_every_check_passes_and_checks_once_per_cache_window(
    client, monkeypatch, settings
):
    settings.SAGEPORT_READINESS_CACHE_SECONDS = 600.0  # the 20 probes all fall in one window
    calls = []
    for name in ("broker", "s3", "docker"):
        monkeypatch.setitem(health.CHECKS, name, lambda timeout, name=name: calls.append(name))

    answers = [client.get("/readyz") for _ in range(20)]

    assert {response.status_code for response in answers} == {200}
    assert answers[0].json() == {"status": "ready", "checked": ["broker", "database", "docker", "s3"]}
    assert sorted(calls) == ["broker", "docker", "s3"]  # the real database check ran too, once


def test_readyz_checks_only_the_parts_the_setting_names(client, settings, monkeypatch):
    def unreachable(timeout):
        raise ConnectionError("Docker engine: no socket in this container")

    settings.SAGEPORT_READINESS_CHECKS = ("database", "broker", "s3")
    for name in ("broker", "s3"):
        monkeypatch.setitem(health.CHECKS, name, lambda timeout: None)
    monkeypatch.setitem(health.CHECKS, "docker", unreachable)

    response = client.get("/readyz")

    assert (response.status_code, response.json()) == (
        200, {"status": "ready", "checked": ["broker", "database", "s3"]}
    )
