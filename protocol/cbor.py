"""Smithy RPC v2 CBOR: `POST .../service/<target prefix>/operation/<Operation>` with the header
`smithy-protocol: rpc-v2-cbor` and a CBOR body (CloudWatch's first protocol in botocore's model;
botocore itself prefers AWS JSON today, newer SDKs may not).

The codec is botocore's own: its CBOR response parser decodes the request (tag 1 timestamps
included) and its shape-driven CBOR serializer encodes the answer. Decoded values become the
JSON values the validator expects (timestamps as epoch seconds, blobs as base64), so the request
then goes through the same pipeline as every other (`dispatch.call`). Errors are CBOR maps with
`__type` and `message`, plus `x-amzn-query-error` for a query-compatible service, as botocore's
RpcV2CBORParser reads them."""

import base64
import re
from datetime import datetime

from botocore.model import ShapeResolver, StructureShape
from botocore.parsers import RpcV2CBORParser
from botocore.serialize import RpcV2CBORSerializer
from django.http import HttpRequest, HttpResponse

from protocol import dispatch, registry
from protocol.errors import SerializationException, ServiceError, UnknownOperationException
from protocol.json_body import MAX_DEPTH
from protocol.limits import echo
from protocol.serialization import MAX_MESSAGE_CHARS, date_header, mark_query_error
from protocol.shapes import operation_model

CBOR_CONTENT_TYPE = "application/cbor"
_PATH = re.compile(r"^(?:.*)/service/(?P<service>[^/]+)/operation/(?P<operation>[^/]+)$")
_ERROR_SHAPE = StructureShape(
    "Error",
    {"type": "structure", "members": {"__type": {"shape": "Text"}, "message": {"shape": "Text"}}},
    ShapeResolver({"Text": {"type": "string"}}),
)


def is_cbor_request(request: HttpRequest) -> bool:
    return request.headers.get("smithy-protocol") == "rpc-v2-cbor"


class SmithyRpcV2Cbor:
    def target(self, request: HttpRequest):
        match = _PATH.match(request.path_info)
        if request.method != "POST" or match is None or match["service"] not in registry.SERVICES:
            raise UnknownOperationException(
                f"Unknown operation: send POST to /service/<service>/operation/<Operation>, not "
                f"{request.method[:16]} {echo(request.path_info)}."
            )
        return registry.SERVICES[match["service"]], match["operation"], lambda: _params(request)

    def success(self, service: registry.Service, operation: str, body: dict, request_id: str) -> HttpResponse:
        output = operation_model(service.botocore_name, operation).output_shape
        return _cbor_response(_encode(body, output), 200, request_id)

    def failure(self, error: ServiceError, request_id: str, service: registry.Service | None) -> HttpResponse:
        body = {"__type": error.code, "message": echo(error.message, MAX_MESSAGE_CHARS)}
        response = _cbor_response(_encode(body, _ERROR_SHAPE), error.status, request_id)
        return response if service is None else mark_query_error(response, error, service.botocore_name)


_CBOR = SmithyRpcV2Cbor()


def cbor_protocol_view(request: HttpRequest) -> HttpResponse:
    return dispatch.answer(request, _CBOR)


def _params(request: HttpRequest) -> dict:
    if not request.body:
        return {}
    parser = RpcV2CBORParser()
    try:
        decoded = parser.parse_data_item(parser.get_peekable_stream_from_bytes(request.body))
    except RecursionError:
        raise SerializationException("The request body nests deeper than CBOR input can.") from None
    except Exception as error:  # botocore's decoder raises whatever a truncated stream gives it
        raise SerializationException(f"The request body is not valid CBOR: {echo(str(error))}") from None
    if not isinstance(decoded, dict):
        raise SerializationException("The request body must be a CBOR map.")
    return _as_json(decoded, 1)


def _as_json(value: object, depth: int) -> object:
    """CBOR values as the JSON protocol carries them, with JSON's nesting bound."""
    if depth > MAX_DEPTH:
        raise SerializationException(f"The request body nests deeper than {MAX_DEPTH} levels.")
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise SerializationException("The request body has a map key that is not a text string.")
        return {key: _as_json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_json(item, depth + 1) for item in value]
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    return value


def _encode(body: dict, shape) -> bytes:
    encoded = bytearray()
    if shape is not None:
        RpcV2CBORSerializer()._serialize_data_item(encoded, _without_none(body), shape)
    return bytes(encoded)


def _without_none(value: object) -> object:
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value if item is not None]
    return value


def _cbor_response(payload: bytes, status: int, request_id: str) -> HttpResponse:
    response = HttpResponse(payload, status=status, content_type=CBOR_CONTENT_TYPE)
    response["smithy-protocol"] = "rpc-v2-cbor"
    response["x-amzn-RequestId"] = request_id
    response["Date"] = date_header()
    response["Content-Length"] = str(len(payload))
    return response
