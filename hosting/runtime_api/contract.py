"""What InvokeEndpoint accepts and answers: its headers, its refusals and errors, the runtime
operations' paths, its Prometheus counts. The data plane's application (dataplane.py) calls these,
on its own port and on the API's (api_port.py, the port containers reach through their forwarder)."""

import functools
import re
from collections.abc import Mapping

from prometheus_client import Histogram

from hosting.health import PLATFORM_USER_AGENT
from hosting.runtime_api.invocation_metrics import Invocation, get_metrics
from hosting.runtime_api.router import usable
from hosting.runtime_api.routing import EndpointRoute
from protocol.arns import log_group_arn
from protocol.context import RequestContext
from protocol.errors import (
    NotImplementedOperation,
    ServiceError,
    UnknownOperationException,
    ValidationException,
)
from protocol.shapes import service_model
from protocol.validation import validate_input

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
STREAM = "InvokeEndpointWithResponseStream"
# Its request headers: InvokeEndpoint's but TargetModel and EnableExplanations, and Accept under a
# name of its own (the container receives it as Accept, as for InvokeEndpoint).
STREAM_REQUEST_HEADERS = {
    **{member: header for member, header in REQUEST_HEADERS.items()
       if member not in ("TargetModel", "EnableExplanations")},
    "Accept": "X-Amzn-SageMaker-Accept",
}
# What the container receives must be what the client signed (botocore signs all of these).
FORWARDED_HEADERS = tuple(header.lower() for header in REQUEST_HEADERS.values())
STREAM_SIGNED_HEADERS = tuple(header.lower() for header in STREAM_REQUEST_HEADERS.values())
_MEMBERS_BY_HEADER = {
    operation: tuple((member, header.lower()) for member, header in headers.items())
    for operation, headers in (("InvokeEndpoint", REQUEST_HEADERS), (STREAM, STREAM_REQUEST_HEADERS))
}
# The operations only the data plane serves: the API port's request threads are too few to be
# held by streams (its view answers 501 naming the port that serves them).
DATA_PLANE_ONLY = (STREAM,)
# Container response headers InvokeEndpoint returns (besides Content-Type).
RESPONSE_HEADERS = (
    "X-Amzn-SageMaker-Custom-Attributes",
    "X-Amzn-SageMaker-New-Session-Id",
    "X-Amzn-SageMaker-Closed-Session-Id",
)
INVOKED_VARIANT_HEADER = "x-Amzn-Invoked-Production-Variant"

# By account, endpoint, variant and HTTP status; the histogram's _count is the invocation count.
# Endpoint and variant are labelled only once the request reached a routed endpoint (else ""):
# a client naming endpoints that do not exist cannot grow the label set.
INVOCATION_SECONDS = Histogram(
    "sageport_invocation_seconds",
    "InvokeEndpoint requests by account, endpoint, variant and HTTP status, with their latency",
    ["account", "endpoint", "variant", "status"],
)
UNROUTED = ("", "", "")
SERVED_OPERATIONS = ("InvokeEndpoint", "InvokeEndpointAsync")  # the latter: async_invocations.py


class ValidationError(ServiceError):
    code = "ValidationError"
    status = 400


class ModelError(ServiceError):
    code = "ModelError"
    status = 424


class ServiceUnavailable(ServiceError):
    code = "ServiceUnavailable"
    status = 503


@functools.cache
def runtime_paths() -> tuple[tuple[str, str], ...]:
    """(path pattern, operation) of every sagemaker-runtime operation, from the botocore model,
    after an optional path prefix as InvokeEndpoint's. Patterns match Django's path (no leading
    slash) and the ASGI one."""
    model = service_model("sagemaker-runtime")
    found = []
    for operation in model.operation_names:
        uri = model.operation_model(operation).http["requestUri"].lstrip("/")
        path = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(uri))
        found.append((rf"^(?:.*/)?{path}$", operation))
    return tuple(found)


def unserved_paths() -> tuple[tuple[str, str], ...]:
    """(path pattern, operation) of every sagemaker-runtime operation not served on both ports
    (InvokeEndpointWithResponseStream's, which the data plane matches before asking, and any the
    model gains)."""
    return tuple((pattern, operation) for pattern, operation in runtime_paths()
                 if operation not in SERVED_OPERATIONS)


def unserved_operation(path: str) -> str | None:
    """The runtime operation Sageport does not serve whose path `path` is, if any."""
    return next((operation for pattern, operation in unserved_paths() if re.match(pattern, path)), None)


def unserved(path: str) -> ServiceError:
    """What an authenticated request to an unserved runtime operation gets: the 501 that the API
    answers for an unserved SageMaker operation (protocol/dispatch.py)."""
    operation = unserved_operation(path)
    if operation in DATA_PLANE_ONLY:
        return NotImplementedOperation(
            f"Sageport serves SageMakerRuntime.{operation} on the runtime port (the data plane) only."
        )
    return NotImplementedOperation(f"Sageport does not implement SageMakerRuntime.{operation}")


def wrong_method(method: str) -> ServiceError:
    return UnknownOperationException(
        f"InvokeEndpoint is POST /endpoints/<name>/invocations, not {method[:16]}."
    )


def too_large() -> ServiceError:
    """A body over 6 MB: refused before it is read (and so before authenticating, which needs it)."""
    return ValidationError(
        "1 validation error detected: Value at 'body' failed to satisfy constraint: "
        f"Member must have length less than or equal to {MAX_BODY_BYTES}"
    )


def params(endpoint_name: str, headers: Mapping[str, str], operation: str = "InvokeEndpoint") -> dict:
    """The request's members of `operation` (InvokeEndpoint or STREAM; `headers` by lower-case
    name), validated against the botocore shape; a ValidationError names what is wrong."""
    found = {"EndpointName": endpoint_name, "Body": ""}  # the body's size is checked on its own
    for member, header in _MEMBERS_BY_HEADER[operation]:
        value = headers.get(header)
        if value:
            found[member] = value
    return dict(_validated(operation, tuple(found.items())))


@functools.lru_cache(maxsize=1024)
def _validated(operation: str, members: tuple[tuple[str, str], ...]) -> tuple[tuple[str, object], ...]:
    """Clients repeat the same headers request after request: their validation is remembered
    (refusals are not: an exception is never cached, so each one is raised again)."""
    try:
        return tuple(validate_input("sagemaker-runtime", operation, dict(members)).items())
    except ValidationException as error:
        raise ValidationError(error.message) from None


def forwarded_headers(members: dict) -> dict[str, str]:
    """The headers the container receives: InvokeEndpoint's own, as the client signed them, and
    the platform's User-Agent (never the client's: SageMaker's hosting sends its own)."""
    headers = {header: members[member] for member, header in REQUEST_HEADERS.items() if member in members}
    headers["User-Agent"] = PLATFORM_USER_AGENT
    return headers


def check_route(
    route: EndpointRoute | None, ctx: RequestContext, endpoint_name: str, target: str | None
) -> None:
    """Refuse an endpoint that does not exist, is not InService, or lacks the target variant."""
    if route is None:
        raise ValidationError(f"Endpoint {endpoint_name} of account {ctx.account_id} not found.")
    if not usable(route):
        raise ValidationError(
            f"Endpoint {endpoint_name} of account {ctx.account_id} is not InService (status: {route.status})."
        )
    if target is not None and target not in {group.variant_name for group in route.groups}:
        raise ValidationError(f"The variant {target} does not exist in endpoint {endpoint_name}.")


def no_container(ctx: RequestContext, endpoint_name: str) -> ServiceError:
    return ServiceUnavailable(
        f"Endpoint {endpoint_name} of account {ctx.account_id} has no healthy container "
        "available right now; try again."
    )


def model_error(ctx: RequestContext, endpoint_name: str, status: int, body: bytes) -> ModelError:
    """The container answered `status` (not 2xx): SageMaker's 424 with the container's message."""
    original = body.decode("utf-8", errors="replace")[:ORIGINAL_MESSAGE_LIMIT]
    kind = "client" if status < 500 else "server"
    return ModelError(
        f'Received {kind} error ({status}) from primary with message "{original}". '
        f"{_see_logs(ctx, endpoint_name)}",
        extra={
            "ErrorCode": f"{kind.upper()}_ERROR_FROM_MODEL",
            "OriginalStatusCode": status,
            "OriginalMessage": original,
            "LogStreamArn": _log_group_arn(ctx, endpoint_name),
        },
    )


def timed_out(ctx: RequestContext, endpoint_name: str, seconds: float) -> ModelError:
    return no_answer(
        ctx,
        endpoint_name,
        "Your invocation timed out while waiting for a response from container primary "
        f"(no answer within {seconds:g} s).",
    )


def no_answer(ctx: RequestContext, endpoint_name: str, message: str) -> ModelError:
    """The container gave no answer (it closed the connection, died or timed out)."""
    return ModelError(
        f'Received server error (0) from primary with message "{message}". {_see_logs(ctx, endpoint_name)}',
        extra={
            "OriginalStatusCode": 0,
            "OriginalMessage": message,
            "LogStreamArn": _log_group_arn(ctx, endpoint_name),
        },
    )


def observe(
    route_labels: tuple[str, str, str], status: int, seconds: float, invocation: Invocation | None
) -> None:
    """Count a request in Prometheus and, if it reached (or tried) a container, in CloudWatch."""
    account, endpoint, variant = route_labels
    INVOCATION_SECONDS.labels(account, endpoint, variant, str(status)).observe(seconds)
    if invocation is not None:
        get_metrics().record(invocation, seconds)


def _log_group_arn(ctx: RequestContext, endpoint_name: str) -> str:
    # ModelError's LogStreamArn: SageMaker puts the endpoint's log group ARN there, not a stream's
    # (`"LogStreamArn":"arn:aws:logs:us-east-1:…:log-group:/aws/sagemaker/Endpoints/<name>"` in
    # captured answers), so clients that parse it find what they find on SageMaker.
    return log_group_arn(ctx.region, ctx.account_id, ENDPOINT_LOG_GROUP.format(name=endpoint_name))


def _see_logs(ctx: RequestContext, endpoint_name: str) -> str:
    group = ENDPOINT_LOG_GROUP.format(name=endpoint_name)
    return f"See the log group {group} in account {ctx.account_id} for more information."
