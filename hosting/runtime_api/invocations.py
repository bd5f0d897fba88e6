"""InvokeEndpoint on the API's port: `POST [<prefix>/]endpoints/<name>/invocations` (REST-JSON)
through Django. Clients are pointed at the data plane (hosting/runtime_api/dataplane.py, its own
port, built for this path); this view serves the containers, which reach only the API (through
their forwarder, gateway/), and clients given a single endpoint URL. Both follow contract.py.

Authenticate, validate the headers against the botocore shape, pick a container from the
in-memory routing table, forward the body and the headers InvokeEndpoint defines, and answer
with the container's body. Container failures become ModelError (424), as in SageMaker."""

import functools
import logging
import time
import uuid

from django.http import HttpRequest, HttpResponse
from django.urls import resolve
from django.utils.http import http_date

from hosting.runtime_api import blocking_upstream, components, contract, multi_model, serverless_gate
from hosting.runtime_api.exchange import Answer, NoAnswer, Refused, TimedOut
from hosting.runtime_api.router import Choice, get_router
from hosting.runtime_api.tries import Tries
from protocol.arns import make_arn
from protocol.authentication import authenticate
from protocol.context import RequestContext
from protocol.errors import InternalFailure, ServiceError
from protocol.limits import declared_length
from protocol.serialization import REST_JSON, error_response

log = logging.getLogger(__name__)


class RuntimeApiMiddleware:
    """Serves InvokeEndpoint ahead of the middleware listed after this one (the admin's sessions,
    users and messages), which the data path never uses but would pay for on every request.
    The route is still found by the URLconf; everything else goes down the chain unchanged."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.endswith("/invocations"):  # cheap test first: the control plane pays nothing
            match = resolve(request.path_info)
            if match.func is invoke_endpoint_view:
                request.resolver_match = match
                return match.func(request, *match.args, **match.kwargs)
        return self.get_response(request)


def invoke_endpoint_view(request: HttpRequest, endpoint_name: str) -> HttpResponse:
    started = time.perf_counter()
    response = _answer(request, endpoint_name)
    contract.observe(
        getattr(request, "sageport_route", contract.UNROUTED),
        response.status_code,
        time.perf_counter() - started,
        getattr(request, "sageport_invocation", None),
    )
    return response


def unserved_runtime_view(request: HttpRequest) -> HttpResponse:
    """The sagemaker-runtime operations Sageport does not serve (contract.unserved_paths): SigV4
    first, as for every operation, then 501 NotImplementedException."""
    request_id = str(uuid.uuid4())
    try:
        if declared_length(request) > contract.MAX_BODY_BYTES:
            raise contract.too_large()
        authenticate(request, request_id=request_id, must_sign=contract.FORWARDED_HEADERS)
        raise contract.unserved(request.path_info)
    except ServiceError as error:
        return error_response(error, request_id, content_type=REST_JSON)


def _answer(request: HttpRequest, endpoint_name: str) -> HttpResponse:
    request_id = str(uuid.uuid4())
    try:
        return _invoke(request, endpoint_name, request_id)
    except ServiceError as error:
        return error_response(error, request_id, content_type=REST_JSON)
    except Exception:
        log.exception("unhandled error in InvokeEndpoint (request id %s)", request_id)
        return error_response(
            InternalFailure("An internal error occurred."), request_id, content_type=REST_JSON
        )


def _invoke(request: HttpRequest, endpoint_name: str, request_id: str) -> HttpResponse:
    if request.method != "POST":
        raise contract.wrong_method(request.method)
    if declared_length(request) > contract.MAX_BODY_BYTES:
        raise contract.too_large()
    ctx = authenticate(request, request_id=request_id, must_sign=contract.FORWARDED_HEADERS)
    params = contract.params(endpoint_name, {name.lower(): value for name, value in request.headers.items()})
    arn = make_arn(ctx.region, ctx.account_id, "endpoint", endpoint_name)
    router = get_router()
    target = params.get("TargetVariant")
    route = router.route(arn)
    contract.check_route(route, ctx, endpoint_name, target)
    if components.applies(route, params):  # to the named inference component's copies
        arn, route = components.resolve(router, ctx, endpoint_name, arn, params)
    request.sageport_route = (ctx.account_id, endpoint_name, target or "")
    headers = contract.forwarded_headers(params)
    if multi_model.check(route, params, endpoint_name):
        note = functools.partial(setattr, request, "sageport_invocation")
        upstream, choice = multi_model.forward(
            router, arn, ctx, endpoint_name, params, request.body, headers, note
        )
    else:
        admission = serverless_gate.admit_blocking(router, route, arn, target, ctx, endpoint_name, request_id)
        try:
            upstream, choice = _forward(router, arn, target, request, headers, ctx, endpoint_name)
        finally:
            serverless_gate.leave(admission)
    request.sageport_route = (ctx.account_id, endpoint_name, choice.variant_name)
    if not 200 <= upstream.status < 300:
        raise contract.model_error(ctx, endpoint_name, upstream.status, upstream.body)
    return _response(upstream, choice, request_id)


def _forward(router, arn, target, request: HttpRequest, headers, ctx: RequestContext, endpoint_name):
    """Send the request to a container, another one while they refuse it (tries.py); the exchange
    is noted on the request (`sageport_invocation`) for the endpoint's CloudWatch metrics."""
    tries = Tries(router, arn, target, ctx, endpoint_name)
    while True:
        choice = tries.choose()
        status = 0
        try:
            answer = blocking_upstream.post(router.pool(choice.backend), request.body, headers)
            status = answer.status
            return answer, choice
        except (Refused, NoAnswer, TimedOut) as error:
            tries.failed(choice, error)
        finally:
            request.sageport_invocation = tries.ended(choice, status)


def _response(upstream: Answer, choice: Choice, request_id: str) -> HttpResponse:
    response = HttpResponse(upstream.body, status=200)
    content_type = upstream.headers.get("Content-Type")
    if content_type:
        response["Content-Type"] = content_type
    else:
        del response["Content-Type"]
    for header in contract.RESPONSE_HEADERS:
        if header in upstream.headers:
            response[header] = upstream.headers[header]
    response[contract.INVOKED_VARIANT_HEADER] = choice.variant_name
    response["x-amzn-RequestId"] = request_id
    response["Date"] = http_date()
    return response
