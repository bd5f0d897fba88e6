"""What every AWS protocol does between reading a request and writing its answer: the size
limit, SigV4, the operation's handler, input validation against the botocore shape, and the
request metric. The protocols (`views`: AWS JSON; `query`: form-encoded Action=...; `cbor`: Smithy
RPC v2 CBOR) differ only in how they find the operation, read the parameters and write answers."""

import logging
import time
import uuid
from collections.abc import Callable
from typing import Protocol

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import Histogram

from protocol import registry
from protocol.authentication import authenticate
from protocol.errors import (
    InternalFailure,
    NotImplementedOperation,
    RequestEntityTooLarge,
    ServiceError,
    UnknownOperationException,
    ValidationException,
)
from protocol.limits import declared_length, echo
from protocol.shapes import operation_model, service_model
from protocol.validation import validate_input

logger = logging.getLogger(__name__)

# Counted by operation (only operations Sageport serves: any other is "unknown", so that a
# client cannot grow the label set) and HTTP status; the histogram's _count is the request count.
REQUEST_SECONDS = Histogram(
    "sageport_api_request_seconds",
    "Control-plane API requests (AWS JSON, query, CBOR) by operation and HTTP status, with their latency",
    ["operation", "status"],
)


class WireProtocol(Protocol):
    """How one wire protocol reads a request's target and parameters and writes answers."""

    def target(self, request: HttpRequest) -> tuple[registry.Service, str, Callable[[], dict]]:
        """The service, the operation and how to read the parameters; a ServiceError otherwise."""

    def success(
        self, service: registry.Service, operation: str, body: dict, request_id: str
    ) -> HttpResponse: ...

    def failure(
        self, error: ServiceError, request_id: str, service: registry.Service | None
    ) -> HttpResponse: ...


def answer(request: HttpRequest, protocol: WireProtocol) -> HttpResponse:
    """The whole exchange in `protocol`'s format, never a traceback on the wire, observed in
    REQUEST_SECONDS."""
    started = time.perf_counter()
    request_id = str(uuid.uuid4())
    service, label = None, "unknown"
    try:
        service, operation, read_params = protocol.target(request)
        if registry.handler_for(service.target_prefix, operation) is not None:
            label = operation
        body = call(request, service, operation, request_id, read_params)
        response = protocol.success(service, operation, body or {}, request_id)
    except ServiceError as error:
        response = protocol.failure(error, request_id, service)
    except Exception:
        # The request id ties the log line to the client's error.
        logger.exception(
            "unhandled error in %s (%s, request id %s)", type(protocol).__name__, label, request_id
        )
        response = protocol.failure(InternalFailure("An internal error occurred."), request_id, service)
    REQUEST_SECONDS.labels(label, str(response.status_code)).observe(time.perf_counter() - started)
    return response


def call(
    request: HttpRequest,
    service: registry.Service,
    operation: str,
    request_id: str,
    read_params: Callable[[], dict],
) -> dict | None:
    """Authenticate, find the handler, validate `read_params()` and run it; ServiceError otherwise."""
    check_size(request, operation)
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
        params = validate_input(service.botocore_name, operation, read_params())
        registry.run_request_checks(context, service, operation, params)
        return handler(context, params)
    except ValidationException as error:
        if service.invalid_input is ValidationException:
            raise
        # Same checks, same wording, under the service's own error code (CloudWatch Logs:
        # InvalidParameterException), whether the shape or a shared helper found the problem.
        raise service.invalid_input(error.message) from None


def check_size(request: HttpRequest, operation: str) -> None:
    """Refused before the body is read (authentication hashes all of it)."""
    limit = settings.SAGEPORT_MAX_REQUEST_BYTES
    if declared_length(request) > limit:
        raise RequestEntityTooLarge(
            f"Request must be smaller than {limit} bytes for the {echo(operation)} operation."
        )
