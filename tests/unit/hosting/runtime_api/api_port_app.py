"""The API port's runtime application (hosting/runtime_api/api_port.py) with a router of the
test's, on an event loop of its own that the test's first runtime request starts (in that
thread's network namespace) and that stops when the test ends."""

import contextlib
import functools

from django.conf import settings

from hosting.runtime_api import api_port
from hosting.runtime_api.dataplane import DataPlane
from hosting.runtime_api.router import Router
from hosting.runtime_api.upstream import Upstream


@contextlib.contextmanager
def serve_with(monkeypatch, router: Router):
    started: list[api_port._ServingLoop] = []

    def serving_loop(process_id: int) -> api_port._ServingLoop:
        upstream = Upstream(settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS)
        started.append(api_port._ServingLoop(DataPlane(router, upstream, streams=False)))
        return started[-1]

    monkeypatch.setattr(api_port, "_loop_of", functools.cache(serving_loop))
    try:
        yield
    finally:
        for serving in started:
            serving.loop.call_soon_threadsafe(serving.loop.stop)
