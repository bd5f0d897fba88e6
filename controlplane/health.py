"""`GET /healthz` (liveness) and `GET /readyz` (readiness) on the API port, unauthenticated, JSON.

Liveness answers as long as the process serves requests. Readiness checks what the API needs
(the database, the broker, the S3 store, the Docker engine: those `SAGEPORT_READINESS_CHECKS`
names), each with a short timeout, and the result is remembered for
`SAGEPORT_READINESS_CACHE_SECONDS` per process, so that a storm of probes costs one round of
checks per second and a dead dependency delays a probe by at most one timeout. A failing part
is named in the 503 body."""

import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from runtime import docker as docker_runtime

Check = Callable[[float], None]  # raises when the dependency cannot be reached within the timeout


def _database(timeout: float) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _broker(timeout: float) -> None:
    client = redis.Redis.from_url(
        settings.CELERY_BROKER_URL, socket_timeout=timeout, socket_connect_timeout=timeout
    )
    try:
        client.ping()
    finally:
        client.close()


def _s3(timeout: float) -> None:
    url = urlsplit(settings.SAGEPORT_S3_ENDPOINT_URL)
    port = url.port or (443 if url.scheme == "https" else 80)
    socket.create_connection((url.hostname, port), timeout=timeout).close()


CHECKS: dict[str, Check] = {
    "database": _database, "broker": _broker, "s3": _s3, "docker": docker_runtime.ping
}

_lock = threading.Lock()
_cached: tuple[float, dict[str, str]] | None = None


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    problems = readiness_problems()
    if problems:
        return JsonResponse({"status": "unavailable", "failing": problems}, status=503)
    return JsonResponse({"status": "ready", "checked": sorted(settings.SAGEPORT_READINESS_CHECKS)})


def readiness_problems() -> dict[str, str]:
    """{part: what went wrong} for each dependency that cannot be reached; {} when all can."""
    global _cached
    with _lock:  # one thread checks, concurrent probes wait for its answer
        now = time.monotonic()
        if _cached is not None and now - _cached[0] < settings.SAGEPORT_READINESS_CACHE_SECONDS:
            return _cached[1]
        problems = {}
        for name in settings.SAGEPORT_READINESS_CHECKS:
            try:
                CHECKS[name](settings.SAGEPORT_READINESS_TIMEOUT_SECONDS)
            except Exception as error:  # any failure means "not ready": name the part and why
                problems[name] = f"{type(error).__name__}: {error}"[:300]
        _cached = (time.monotonic(), problems)
        return problems


def forget() -> None:
    """Drop the remembered answer (tests, and settings changes)."""
    global _cached
    with _lock:
        _cached = None
