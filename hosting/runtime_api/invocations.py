"""The runtime API: `POST [<prefix>/]endpoints/<name>/invocations` (InvokeEndpoint, REST-JSON),
served on the same port as the control plane.

Authenticate, validate the headers against the botocore shape, pick a container from the
in-memory routing table, forward the body and the headers InvokeEndpoint defines, and answer
with the container's body. Container failures become ModelError (424), as in SageMaker."""

import functools
import logging
import time
import uuid

import urllib3
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import resolve
from django.utils.http import http_date
from prometheus_client import Histogram
from urllib3.exceptions import ConnectTimeoutError, HTTPError, ReadTimeoutError

from hosting.runtime_api.invocation_metrics import Invocation, get_metrics
from hosting.runtime_api.router import Choice, NoRoute, get_router
from hosting.runtime_api.routing import ROUTABLE_ENDPOINT_STATUSES
from protocol.arns import log_group_arn, make_arn
from protocol.authentication import authenticate
from protocol.context import RequestContext
from protocol.errors import InternalFailure, ServiceError, UnknownOperationException, ValidationException
from protocol.limits import declared_length
from protocol.serialization import REST_JSON, error_response
from protocol.validation import validate_input

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 6 * 1024 * 1024
ORIGINAL_MESSAGE_LIMIT = 4096
ENDPOINT_LOG_GROUP = "/aws/sagemaker/Endpoints/{name}"

# InvokeEndpoint's request headers (by botocore member), the only ones a container receives.
REQUEST_HEADERS = {
    "ContentType": "Content-Type",
    "Accept": "Accept",
    "CustomAttributes": "X-Amzn-SageMaker-Custom-Attributes",
    "TargetModel": "X-Amzn-SageMaker-Target-Model",
    "TargetVariant": "X-Amzn-SageMaker-Target-Variant",
    "TargetContainerHostname": "X-Amzn-SageMaker-Target-Container-Hostname",
    "InferenceId": "X-Amzn-SageMaker-Inference-Id",
    "EnableExplanations": "X-Amzn-SageMaker-Enable-Explanations",
    "InferenceComponentName": "X-Amzn-SageMaker-Inference-Component",
    "SessionId": "X-Amzn-SageMaker-Session-Id",
    "PrefixAwareId": "X-Amzn-SageMaker-Prefix-Aware-Id",
}
# What the container receives must be what the client signed (botocore signs all of these).
_FORWARDED_HEADERS = tuple(header.lower() for header in REQUEST_HEADERS.values())
# Container response headers InvokeEndpoint returns (besides Content-Type).
RESPONSE_HEADERS = (
    "X-Amzn-SageMaker-Custom-Attributes",
    "X-Amzn-SageMaker-New-Session-Id",
    "X-Amzn-SageMaker-Closed-Session-Id",
)


# By account, endpoint, variant and HTTP status; the histogram's _count is the invocation count.
# Endpoint and variant are labelled only once the request reached a routed endpoint (else ""):
# a client naming endpoints that do not exist cannot grow the label set.
INVOCATION_SECONDS = Histogram(
    "sageport_invocation_seconds",
    "InvokeEndpoint requests by account, endpoint, variant and HTTP status, with their latency",
    ["account", "endpoint", "variant", "status"],
)
_UNROUTED = ("", "", "")


class ValidationError(ServiceError):
    code = "ValidationError"
    status = 400


class ModelError(ServiceError):
    code = "ModelError"
    status = 424


class ServiceUnavailable(ServiceError):
    code = "ServiceUnavailable"
    status = 503


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
    elapsed = time.perf_counter() - started
    account, endpoint, variant = getattr(request, "sageport_route", _UNROUTED)
    INVOCATION_SECONDS.labels(account, endpoint, variant, str(response.status_code)).observe(elapsed)
    invocation = getattr(request, "sageport_invocation", None)
    if invocation is not None:  # the request reached (or tried) a container: CloudWatch counts it
        get_metrics().record(invocation, elapsed)
    return response


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
        raise UnknownOperationException(
            f"InvokeEndpoint is POST /endpoints/<name>/invocations, not {request.method[:16]}."
        )
    if declared_length(request) > MAX_BODY_BYTES:
        # Refused before reading (and so before authenticating, which needs the whole body).
        raise ValidationError(
            "1 validation error detected: Value at 'body' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_BODY_BYTES}"
        )
    ctx = authenticate(request, request_id=request_id, must_sign=_FORWARDED_HEADERS)
    params = _params(request, endpoint_name)
    arn = make_arn(ctx.region, ctx.account_id, "endpoint", endpoint_name)
    router = get_router()
    route = router.route(arn)
    if route is None:
        raise ValidationError(f"Endpoint {endpoint_name} of account {ctx.account_id} not found.")
    if route.status not in ROUTABLE_ENDPOINT_STATUSES:
        raise ValidationError(
            f"Endpoint {endpoint_name} of account {ctx.account_id} is not InService (status: {route.status})."
        )
    target = params.get("TargetVariant")
    if target is not None and target not in {group.variant_name for group in route.groups}:
        raise ValidationError(f"The variant {target} does not exist in endpoint {endpoint_name}.")
    headers = {header: params[member] for member, header in REQUEST_HEADERS.items() if member in params}
    request.sageport_route = (ctx.account_id, endpoint_name, target or "")
    upstream, choice = _forward(router, arn, target, request, headers, ctx, endpoint_name)
    request.sageport_route = (ctx.account_id, endpoint_name, choice.variant_name)
    if not 200 <= upstream.status < 300:
        raise _model_error(ctx, endpoint_name, upstream)
    return _response(upstream, choice, request_id)


def _params(request: HttpRequest, endpoint_name: str) -> dict:
    params = {"EndpointName": endpoint_name, "Body": ""}  # the body's size is checked above
    for member, header in REQUEST_HEADERS.items():
        value = request.headers.get(header)
        if value:
            params[member] = value
    return dict(_validated(tuple(params.items())))


@functools.lru_cache(maxsize=1024)
def _validated(params: tuple[tuple[str, str], ...]) -> tuple[tuple[str, object], ...]:
    """Clients repeat the same headers request after request: their validation is remembered
    (refusals are not: an exception is never cached, so each one is raised again)."""
    try:
        return tuple(validate_input("sagemaker-runtime", "InvokeEndpoint", dict(params)).items())
    except ValidationException as error:
        raise ValidationError(error.message) from None


def _forward(router, arn, target, request: HttpRequest, headers, ctx: RequestContext, endpoint_name):
    """Send the request to a container; a container that refuses the connection (nothing was
    sent) is avoided and another one tried. The exchange is noted on the request
    (`sageport_invocation`) for the endpoint's CloudWatch metrics, whatever its outcome."""
    refused: set[str] = set()
    sent = time.perf_counter()
    while True:
        try:
            choice = router.choose(arn, target, avoid=refused)
        except NoRoute:
            raise ServiceUnavailable(
                f"Endpoint {endpoint_name} of account {ctx.account_id} has no healthy container "
                "available right now; try again."
            ) from None
        status = 0
        try:
            upstream = router.pool(choice.backend).urlopen(
                "POST", "/invocations", body=request.body, headers=headers, redirect=False,
                assert_same_host=False,
            )
            status = upstream.status
            return upstream, choice
        except ConnectTimeoutError:  # also NewConnectionError: refused or not accepted in 250 ms
            refused.add(choice.backend.container_name)
        except ReadTimeoutError:
            seconds = settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS
            raise _no_answer(
                ctx,
                endpoint_name,
                (
                    "Your invocation timed out while waiting for a response from container primary "
                    f"(no answer within {seconds:g} s)."
                ),
            ) from None
        except HTTPError as error:  # the container closed the connection or died mid-request
            raise _no_answer(ctx, endpoint_name, f"The container did not answer: {error}") from None
        finally:
            router.release(choice)
            model_seconds = time.perf_counter() - sent
            request.sageport_invocation = Invocation(
                ctx.account_id, ctx.region, endpoint_name, choice.variant_name, model_seconds, status
            )


def _response(upstream: urllib3.BaseHTTPResponse, choice: Choice, request_id: str) -> HttpResponse:
    response = HttpResponse(upstream.data, status=200)
    content_type = upstream.headers.get("Content-Type")
    if content_type:
        response["Content-Type"] = content_type
    else:
        del response["Content-Type"]
    for header in RESPONSE_HEADERS:
        if header in upstream.headers:
            response[header] = upstream.headers[header]
    response["x-Amzn-Invoked-Production-Variant"] = choice.variant_name
    response["x-amzn-RequestId"] = request_id
    response["Date"] = http_date()
    return response


def _model_error(ctx: RequestContext, endpoint_name: str, upstream: urllib3.BaseHTTPResponse) -> ModelError:
    original = upstream.data.decode("utf-8", errors="replace")[:ORIGINAL_MESSAGE_LIMIT]
    kind = "client" if upstream.status < 500 else "server"
    return ModelError(
        f'Received {kind} error ({upstream.status}) from primary with message "{original}". '
        f"{_see_logs(ctx, endpoint_name)}",
        extra={
            "ErrorCode": f"{kind.upper()}_ERROR_FROM_MODEL",
            "OriginalStatusCode": upstream.status,
            "OriginalMessage": original,
            "LogStreamArn": _log_group_arn(ctx, endpoint_name),
        },
    )


def _no_answer(ctx: RequestContext, endpoint_name: str, message: str) -> ModelError:
    return ModelError(
        f'Received server error (0) from primary with message "{message}". {_see_logs(ctx, endpoint_name)}',
        extra={
            "OriginalStatusCode": 0,
            "OriginalMessage": message,
            "LogStreamArn": _log_group_arn(ctx, endpoint_name),
        },
    )


def _log_group_arn(ctx: RequestContext, endpoint_name: str) -> str:
    return log_group_arn(ctx.region, ctx.account_id, ENDPOINT_LOG_GROUP.format(name=endpoint_name))


def _see_logs(ctx: RequestContext, endpoint_name: str) -> str:
    group = ENDPOINT_LOG_GROUP.format(name=endpoint_name)
    return f"See the log group {group} in account {ctx.account_id} for more information."
