"""The AWS JSON endpoint (1.1 and 1.0): `POST` anywhere with `X-Amz-Target: <Prefix>.<Operation>`."""

import logging
import uuid

from django.http import HttpRequest, HttpResponse

from protocol import dispatch, registry
from protocol.errors import InternalFailure, SerializationException, ServiceError, UnknownOperationException
from protocol.json_body import parse_json_object
from protocol.limits import echo
from protocol.serialization import error_response, json_response, mark_query_error
from protocol.shapes import service_model

logger = logging.getLogger(__name__)

_ACCEPTED_CONTENT_TYPES = ("application/x-amz-json-1.1", "application/json", "application/x-amz-json-1.0")


def json_protocol_view(request: HttpRequest) -> HttpResponse:
    return dispatch.timed(lambda: _answer(request), lambda: _target_names(request))


def _target_names(request: HttpRequest) -> tuple[str, str]:
    prefix, _, operation = request.headers.get("X-Amz-Target", "").partition(".")
    return prefix, operation


def _answer(request: HttpRequest) -> HttpResponse:
    request_id = str(uuid.uuid4())
    service = None
    try:
        service, operation = _target(request)
        body = dispatch.call(request, service, operation, request_id, lambda: _json_body(request))
        return json_response(body, request_id, content_type=_content_type(service))
    except ServiceError as error:
        return _error(error, request_id, service)
    except Exception:
        # Never a traceback on the wire; the request id ties the log line to the client's error.
        logger.exception(
            "unhandled error in %s (request id %s)", request.headers.get("X-Amz-Target"), request_id
        )
        return _error(InternalFailure("An internal error occurred."), request_id, service)


def _content_type(service: registry.Service) -> str:
    return f"application/x-amz-json-{service_model(service.botocore_name).metadata.get('jsonVersion', '1.1')}"


def _error(error: ServiceError, request_id: str, service: registry.Service | None) -> HttpResponse:
    if service is None:
        return error_response(error, request_id)
    response = error_response(error, request_id, content_type=_content_type(service))
    return mark_query_error(response, error, service.botocore_name)


def _target(request: HttpRequest) -> tuple[registry.Service, str]:
    prefix, operation = _target_names(request)
    if request.method != "POST" or prefix not in registry.SERVICES or not operation:
        raise UnknownOperationException(
            f"Unknown operation {echo(request.headers.get('X-Amz-Target', ''))!r}: send POST with "
            f"X-Amz-Target set to one of {', '.join(registry.SERVICES)} followed by '.<Operation>'."
        )
    return registry.SERVICES[prefix], operation


def _json_body(request: HttpRequest) -> dict:
    content_type = request.content_type or ""
    if content_type not in _ACCEPTED_CONTENT_TYPES:
        raise SerializationException(
            f"Unsupported Content-Type {echo(content_type)!r}; expected {', '.join(_ACCEPTED_CONTENT_TYPES)}."
        )
    return parse_json_object(request.body)
