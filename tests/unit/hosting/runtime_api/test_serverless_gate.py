"""Admission to a serverless endpoint: throttled past MaxConcurrency with SageMaker's
ThrottlingException; a request with no container raises the count (once per count seen) and
waits for one within the invocation timeout; a warm container serves at once; the slot is given
back however the wait ends."""

import asyncio

import pytest

from hosting.runtime_api import serverless_gate
from hosting.runtime_api.routing import Backend, EndpointRoute, RouteGroup, ServerlessLimits
from protocol.context import RequestContext
from protocol.errors import ServiceUnavailable

ARN = "arn:aws:sagemaker:us-east-1:123456789012:endpoint/e"
CTX = RequestContext(account_id="123456789012", region="us-east-1", access_key_id="AKID")


def _route(desired: int, backends: int = 0, max_concurrency: int = 2) -> EndpointRoute:
    group = RouteGroup(
        "AllTraffic",
        1.0,
        tuple(Backend(f"c{n}", "127.0.0.1", 9000 + n) for n in range(backends)),
        ServerlessLimits(deployment_pk=7, max_concurrency=max_concurrency, desired_count=desired),
    )
    return EndpointRoute("e", "123456789012", "us-east-1", "InService", (group,))


class _Router:
    def __init__(self, route: EndpointRoute):
        self.route = route

    def lookup(self, arn: str) -> EndpointRoute:
        return self.route


@pytest.fixture
def slots(monkeypatch):
    """Slots counted in memory instead of Redis; what was asked of the scaler."""
    state = {"held": [], "scaled": [], "nudged": []}

    def acquire(pk, variant, request_id, maximum):
        if len(state["held"]) >= maximum:
            return None
        state["held"].append(request_id)
        return len(state["held"])

    monkeypatch.setattr(serverless_gate.serverless_slots, "acquire", acquire)
    monkeypatch.setattr(serverless_gate.serverless_slots, "release", lambda pk, v, r: state["held"].remove(r))

    def scale_up(pk, variant, in_flight):
        state["scaled"].append(in_flight)
        return 42

    monkeypatch.setattr(serverless_gate.serverless_scaling, "scale_up", scale_up)
    monkeypatch.setattr(serverless_gate, "_nudge", state["nudged"].append)
    return state


def admit(router, route, arn, target, ctx, endpoint_name, request_id):
    return asyncio.run(serverless_gate.admit(router, route, arn, target, ctx, endpoint_name, request_id))


def test_a_warm_container_serves_at_once_without_scaling(slots):
    router = _Router(_route(desired=1, backends=1))
    admission = admit(router, router.route, ARN, None, CTX, "e", "r1")
    assert admission.variant_name == "AllTraffic" and slots["held"] == ["r1"]
    assert slots["scaled"] == []
    serverless_gate.leave(admission)
    assert slots["held"] == []


def test_requests_past_max_concurrency_are_throttled(slots):
    router = _Router(_route(desired=2, backends=2, max_concurrency=2))
    for request_id in ("r1", "r2"):
        admit(router, router.route, ARN, None, CTX, "e", request_id)
    with pytest.raises(serverless_gate.ThrottlingException) as throttled:
        admit(router, router.route, ARN, None, CTX, "e", "r3")
    assert (throttled.value.code, throttled.value.status) == ("ThrottlingException", 400)
    assert "MaxConcurrency of 2" in str(throttled.value)


def test_a_cold_start_raises_the_count_once_and_waits_for_the_container(slots):
    router = _Router(_route(desired=0))
    waiting = serverless_gate._Waiting(router, ARN, serverless_gate.Admission(7, "AllTraffic", "r1"), taken=1)
    assert not waiting.ready() and not waiting.ready()
    assert slots["scaled"] == [1] and slots["nudged"] == [42]  # asked once for the count it saw
    router.route = _route(desired=1, backends=1)  # the reconciler's container is InService
    assert waiting.ready()


def test_a_cold_start_past_the_invocation_timeout_gives_the_slot_back(slots, settings):
    settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS = 0.2
    router = _Router(_route(desired=0))
    with pytest.raises(ServiceUnavailable, match="cold start"):
        admit(router, router.route, ARN, None, CTX, "e", "r1")
    assert slots["held"] == []


def test_the_wait_is_on_the_loop_and_the_slot_is_given_back_either_way(slots, settings):
    settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS = 0.2
    router = _Router(_route(desired=0))
    with pytest.raises(ServiceUnavailable):
        asyncio.run(serverless_gate.admit(router, router.route, ARN, None, CTX, "e", "r1"))
    assert slots["held"] == [] and slots["scaled"] == [1]
    router.route = _route(desired=1, backends=1)
    admission = asyncio.run(serverless_gate.admit(router, router.route, ARN, None, CTX, "e", "r2"))
    asyncio.run(serverless_gate.leave_async(admission))
    assert slots["held"] == []


def test_instance_based_endpoints_are_not_gated(slots):
    route = EndpointRoute("e", "a", "r", "InService", (RouteGroup("v", 1.0, ()),))
    assert admit(_Router(route), route, ARN, None, CTX, "e", "r1") is None
    serverless_gate.refuse_stream(route, "e")
    with pytest.raises(Exception, match="InvokeEndpointWithResponseStream is not supported"):
        serverless_gate.refuse_stream(_route(0), "e")
