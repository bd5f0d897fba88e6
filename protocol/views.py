"""The AWS JSON 1.1 endpoint: `POST` anywhere with `X-Amz-Target: <Prefix>.<Operation>`."""

import logging
import time
import uuid

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import Histogram

from protocol import registry
from protocol.authentication import authenticate
from protocol.errors import (
    InternalFailure,
    NotImplementedOperation,
    RequestEntityTooLarge,
    SerializationException,
    ServiceError,
    UnknownOperationException,
    ValidationException,
)
from protocol.json_body import parse_json_object
from protocol.limits import declared_length, echo
from protocol.serialization import error_response, json_response
from protocol.shapes import operation_model, service_model
from protocol.validation import validate_input

logger = logging.getLogger(__name__)

# Counted by operation (only operations Sageport serves: any other target is "unknown", so that a
# client cannot grow the label set) and HTTP status; the histogram's _count is the request count.
REQUEST_SECONDS = Histogram(
    "sageport_api_request_seconds",
    "Control-plane API requests (JSON 1.1) by operation and HTTP status, with their latency",
    ["operation", "status"],
)

_ACCEPTED_CONTENT_TYPES = ("application/x-amz-json-1.1", "application/json", "application/x-amz-json-1.0")


def json_protocol_view(request: HttpRequest) -> HttpResponse:
    started = time.perf_counter()
    response = _answer(request)
    REQUEST_SECONDS.labels(_operation_label(request), str(response.status_code)).observe(
        time.perf_counter() - started
    )
    return response


def _operation_label(request: HttpRequest) -> str:
    prefix, _, operation = request.headers.get("X-Amz-Target", "").partition(".")
    return operation if registry.handler_for(prefix, operation) is not None else "unknown"


def _answer(request: HttpRequest) -> HttpResponse:
    request_id = str(uuid.uuid4())
    try:
        return json_response(_dispatch(request, request_id), request_id)
    except ServiceError as error:
        return error_response(error, request_id)
    except Exception:
        # Never a traceback on the wire; the request id ties the log line to the client's error.
        logger.exception(
            "unhandled error in %s (request id %s)", request.headers.get("X-Amz-Target"), request_id
        )
        return error_response(InternalFailure("An internal error occurred."), request_id)


def _dispatch(request: HttpRequest, request_id: str) -> dict | None:
    service, operation = _target(request)
    _check_size(request, operation)
    context = authenticate(
        request, signing_name=service_model(service.botocore_name).signing_name, request_id=request_id
    )
    if operation_model(service.botocore_name, operation) is None:
        raise UnknownOperationException(
            f"Operation {service.target_prefix}.{echo(operation)} does not exist."
        )
    handler = registry.handler_for(service.target_prefix, operation)
    if handler is None:
        raise NotImplementedOperation(f"Sageport does not implement {service.target_prefix}.{operation}")
    try:
        params = validate_input(service.botocore_name, operation, _json_body(request))
        return handler(context, params)
    except ValidationException as error:
        if service.invalid_input is ValidationException:
            raise
        # Same checks, same wording, under the service's own error code (CloudWatch Logs:
        # InvalidParameterException), whether the shape or a shared helper found the problem.
        raise service.invalid_input(error.message) from None


def _target(request: HttpRequest) -> tuple[registry.Service, str]:
    target = request.headers.get("X-Amz-Target", "")
    prefix, _, operation = target.partition(".")
    if request.method != "POST" or prefix not in registry.SERVICES or not operation:
        raise UnknownOperationException(
            f"Unknown operation {echo(target)!r}: send POST with X-Amz-Target set to one of "
            f"{', '.join(registry.SERVICES)} followed by '.<Operation>'."
        )
    return registry.SERVICES[prefix], operation


def _check_size(request: HttpRequest, operation: str) -> None:
    """Refused before the body is read (authentication hashes all of it)."""
    limit = settings.SAGEPORT_MAX_REQUEST_BYTES
    if declared_length(request) > limit:
        raise RequestEntityTooLarge(
            f"Request must be smaller than {limit} bytes for the {echo(operation)} operation."
        )


def _json_body(request: HttpRequest) -> dict:
    content_type = request.content_type or ""
    if content_type not in _ACCEPTED_CONTENT_TYPES:
        raise SerializationException(
            f"Unsupported Content-Type {echo(content_type)!r}; expected {', '.join(_ACCEPTED_CONTENT_TYPES)}."
        )
    return parse_json_object(request.body)
