"""The AWS JSON endpoint (1.1 and 1.0): `POST` anywhere with `X-Amz-Target: <Prefix>.<Operation>`."""

from django.http import HttpRequest, HttpResponse

from protocol import dispatch, registry
from protocol.errors import SerializationException, ServiceError, UnknownOperationException
from protocol.json_body import parse_json_object
from protocol.limits import echo
from protocol.serialization import error_response, json_response, mark_query_error
from protocol.shapes import service_model

_ACCEPTED_CONTENT_TYPES = ("application/x-amz-json-1.1", "application/json", "application/x-amz-json-1.0")


class AwsJson:
    def target(self, request: HttpRequest):
        prefix, _, operation = request.headers.get("X-Amz-Target", "").partition(".")
        if request.method != "POST" or prefix not in registry.SERVICES or not operation:
            raise UnknownOperationException(
                f"Unknown operation {echo(request.headers.get('X-Amz-Target', ''))!r}: send POST with "
                f"X-Amz-Target set to one of {', '.join(registry.SERVICES)} followed by '.<Operation>'."
            )
        return registry.SERVICES[prefix], operation, lambda: _json_body(request)

    def success(self, service: registry.Service, operation: str, body: dict, request_id: str) -> HttpResponse:
        return json_response(body, request_id, content_type=_content_type(service))

    def failure(self, error: ServiceError, request_id: str, service: registry.Service | None) -> HttpResponse:
        if service is None:
            return error_response(error, request_id)
        response = error_response(error, request_id, content_type=_content_type(service))
        return mark_query_error(response, error, service.botocore_name)


_AWS_JSON = AwsJson()


def json_protocol_view(request: HttpRequest) -> HttpResponse:
    return dispatch.answer(request, _AWS_JSON)


def _content_type(service: registry.Service) -> str:
    return f"application/x-amz-json-{service_model(service.botocore_name).metadata.get('jsonVersion', '1.1')}"


def _json_body(request: HttpRequest) -> dict:
    content_type = request.content_type or ""
    if content_type not in _ACCEPTED_CONTENT_TYPES:
        raise SerializationException(
            f"Unsupported Content-Type {echo(content_type)!r}; expected {', '.join(_ACCEPTED_CONTENT_TYPES)}."
        )
    return parse_json_object(request.body)
