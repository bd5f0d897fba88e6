"""The API port's runtime application (hosting/runtime_api/api_port.py) with a router of the
test's: its loops are made by the test's requests (a socket a loop opens is in the network
namespace of the thread running it then) and closed, their connections first, when the test
ends."""

import contextlib
from collections import deque

from hosting.runtime_api import api_port
from hosting.runtime_api.dataplane import DataPlane
from hosting.runtime_api.router import Router
from hosting.runtime_api.upstream import Upstream


@contextlib.contextmanager
def serve_with(monkeypatch, router: Router):
    made: list[api_port._Serving] = []

    def serving_app(streams: bool) -> DataPlane:
        return DataPlane(router, Upstream(timeout_seconds=5), streams)

    class Noted(api_port._Serving):
        def __init__(self):
            super().__init__()
            made.append(self)

    monkeypatch.setattr(api_port, "serving_app", serving_app)
    monkeypatch.setattr(api_port, "_Serving", Noted)
    monkeypatch.setattr(api_port, "_idle", deque())
    try:
        yield
    finally:
        for serving in made:
            serving.loop.run_until_complete(serving.app.upstream.close())
            serving.loop.close()
