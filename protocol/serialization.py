"""Responses in AWS's JSON wire formats: JSON 1.1 (SageMaker, CloudWatch Logs), JSON 1.0
(CloudWatch) and REST-JSON (the SageMaker runtime), successes and errors. The query protocol's
XML is `protocol/query.py`."""

import json
import math
import time
from datetime import UTC, datetime

import orjson
from django.http import HttpResponse
from django.utils.http import http_date

from protocol.errors import ServiceError
from protocol.limits import echo
from protocol.shapes import service_model

AMZ_JSON_11 = "application/x-amz-json-1.1"
# A last bound on any error message (the modeled Message is ≤1024 in SageMaker; ModelError
# carries up to 4 KiB of the container's own text), whatever raised it.
MAX_MESSAGE_CHARS = 8192
REST_JSON = "application/json"


def to_wire(value: object) -> object:
    """Handler output as JSON values: datetimes become epoch seconds (millisecond precision),
    NaN and infinities AWS's strings for them, and None members are dropped at every depth
    (botocore treats null as absent anyway)."""
    if isinstance(value, dict):
        return {key: to_wire(item) for key, item in value.items() if item is not None}
    if isinstance(value, list | tuple):
        return [to_wire(item) for item in value if item is not None]
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return round(aware.timestamp(), 3)
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[str(value)]
    return value


# AWS's JSON protocols write a double that is not a number as these strings (botocore sends
# them so too); JSON has no literal for them, and orjson would write null.
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def json_response(
    body: dict | None, request_id: str, *, status: int = 200, content_type: str = AMZ_JSON_11
) -> HttpResponse:
    # orjson writes compact UTF-8 JSON in one pass in C: the standard library's encoder was
    # about a third of the cost of answering a DescribeTrainingJob (docs/performance.md).
    payload = _json_bytes(to_wire(body or {}))
    response = HttpResponse(payload, status=status, content_type=content_type)
    response["x-amzn-RequestId"] = request_id
    response["Date"] = date_header()
    response["Content-Length"] = str(len(payload))
    return response


def _json_bytes(wire: object) -> bytes:
    try:
        return orjson.dumps(wire)
    except orjson.JSONEncodeError:  # an int beyond 64 bits, a key that is not a string: never a 500
        return json.dumps(wire, separators=(",", ":")).encode()  # \u escapes: any string encodes


_date_of_second: tuple[int, str] = (0, "")


def date_header() -> str:
    """The `Date` header's value (RFC 7231), formatted once per second rather than per answer."""
    global _date_of_second
    second = int(time.time())
    cached_second, text = _date_of_second
    if cached_second != second:
        text = http_date(second)
        _date_of_second = (second, text)  # one tuple: threads read either the old or the new
    return text


def error_response(error: ServiceError, request_id: str, *, content_type: str = AMZ_JSON_11) -> HttpResponse:
    """An error both protocols read: `__type` and `Message` (capital M, so botocore also fills
    the modeled shape's `Message`), the error's extra members, and `X-Amzn-ErrorType`, which
    the REST-JSON parser prefers over the body. Pass `content_type=REST_JSON` for the runtime."""
    body = {"__type": error.code, "Message": echo(error.message, MAX_MESSAGE_CHARS), **error.extra}
    response = json_response(body, request_id, status=error.status, content_type=content_type)
    response["X-Amzn-ErrorType"] = error.code
    return response


# The query protocol's names for the errors every service shares (what CloudWatch answers on the
# query protocol, and in `x-amzn-query-error` on JSON); service errors already carry theirs.
_QUERY_ERROR_CODES = {
    "InvalidSignatureException": "SignatureDoesNotMatch",
    "UnrecognizedClientException": "InvalidClientTokenId",
    "AccessDeniedException": "AccessDenied",
    "MissingAuthenticationTokenException": "MissingAuthenticationToken",
    "IncompleteSignatureException": "IncompleteSignature",
    "UnknownOperationException": "InvalidAction",
    "SerializationException": "MalformedInput",
    "RequestEntityTooLargeException": "RequestEntityTooLarge",
    "NotImplementedException": "NotImplemented",
    "InternalFailure": "InternalFailure",
}


def query_error_code(error: ServiceError) -> str:
    return _QUERY_ERROR_CODES.get(error.code, error.code)


def mark_query_error(response: HttpResponse, error: ServiceError, botocore_name: str) -> HttpResponse:
    """A service that came from the query protocol (CloudWatch: the model's awsQueryCompatible
    trait) tells botocore its query error code in a header on JSON and CBOR answers:
    `Code;Sender`, or `Code;Receiver` for the server's own faults."""
    if service_model(botocore_name).is_query_compatible:
        fault = "Sender" if error.status < 500 else "Receiver"
        response["x-amzn-query-error"] = f"{query_error_code(error)};{fault}"
    return response
