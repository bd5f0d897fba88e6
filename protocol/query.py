"""The AWS query protocol: `POST` with a form body `Action=<Operation>&Version=<api version>&...`
(how older SDKs and many other clients call CloudWatch), answered in XML.

The form is read against the operation's botocore input shape (`Dimensions.member.1.Name`,
`Map.entry.1.key`, ISO 8601 timestamps, numbers and booleans as text) into the same parameters a
JSON request carries, then goes through the same pipeline (`dispatch.call`): SigV4, validation,
the handler. Fields the shape does not define are kept as top-level members, so the validator
refuses them in its usual words. Answers and errors are the XML botocore's query parser reads."""

import re
from bisect import bisect_left
from datetime import UTC, datetime
from urllib.parse import parse_qsl
from xml.etree import ElementTree

from botocore.model import Shape
from django.http import HttpRequest, HttpResponse

from protocol import dispatch, registry
from protocol.errors import SerializationException, ServiceError, UnknownOperationException
from protocol.limits import echo
from protocol.serialization import MAX_MESSAGE_CHARS, date_header, query_error_code
from protocol.shapes import operation_model, service_model

FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
XML_CONTENT_TYPE = "text/xml"
# More fields than any real request of a query service sends (CloudWatch's largest, PutMetricData
# with 1,000 values, stays well below), so parsing stays bounded.
MAX_FIELDS = 20_000
_INTEGER = re.compile(r"^-?\d{1,20}$")
_ABSENT = object()
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def is_query_request(request: HttpRequest) -> bool:
    return request.method == "POST" and request.content_type == FORM_CONTENT_TYPE


class AwsQuery:
    def target(self, request: HttpRequest):
        dispatch.check_size(request, "query")
        fields = _form(request.body)
        service, action = _service_and_action(fields)
        return service, action, lambda: _params(service, action, fields)

    def success(self, service: registry.Service, operation: str, body: dict, request_id: str) -> HttpResponse:
        return _xml_response(_result_document(service, operation, body, request_id), 200, request_id)

    def failure(self, error: ServiceError, request_id: str, service: registry.Service | None) -> HttpResponse:
        return _xml_response(
            _error_document(error, request_id, _namespace(service)), error.status, request_id
        )


_QUERY = AwsQuery()


def query_protocol_view(request: HttpRequest) -> HttpResponse:
    return dispatch.answer(request, _QUERY)


def _namespace(service: registry.Service | None) -> str:
    return service_model(service.botocore_name).metadata.get("xmlNamespace", "") if service else ""


def _form(body: bytes) -> dict[str, str]:
    try:
        pairs = parse_qsl(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=bool(body),
            max_num_fields=MAX_FIELDS,
            errors="strict",
        )
    except (UnicodeDecodeError, ValueError) as error:
        raise SerializationException(f"The request body is not a valid form: {echo(str(error))}") from None
    fields = dict(pairs)
    if len(fields) != len(pairs):
        raise SerializationException("The request body names a parameter more than once.")
    return fields


def _service_and_action(fields: dict[str, str]) -> tuple[registry.Service, str]:
    action, version = fields.get("Action", ""), fields.get("Version", "")
    for service in registry.SERVICES.values():
        model = service_model(service.botocore_name)
        if "query" in (model.metadata.get("protocols") or [model.protocol]) and model.api_version == version:
            if operation_model(service.botocore_name, action) is None:
                raise UnknownOperationException(
                    f"Could not find operation {echo(action)} for version {version}."
                )
            return service, action
    raise UnknownOperationException(
        f"No service Sageport serves over the query protocol has the API version {echo(version)!r} "
        f"(Action {echo(action)!r})."
    )


def _params(service: registry.Service, action: str, fields: dict[str, str]) -> dict:
    shape = operation_model(service.botocore_name, action).input_shape
    used = {"Action", "Version"}
    params = {} if shape is None else _decode(shape, fields, _Names(fields), "", used)
    # Unknown fields become unknown members: the validator names them like any other mistake.
    params.update({key: value for key, value in fields.items() if key not in used})
    return params


class _Names:
    """Whether a structure or list item is present: some field is named `key` or `key.…`.
    Looked up in the sorted names (never by listing every prefix of every name, which a
    request of long dotted names would make quadratic)."""

    def __init__(self, fields: dict[str, str]):
        self._names = sorted(fields)
        self._exact = set(fields)

    def __contains__(self, key: str) -> bool:
        if key in self._exact:
            return True
        index = bisect_left(self._names, key + ".")
        return index < len(self._names) and self._names[index].startswith(key + ".")


def _decode(shape: Shape, fields: dict, prefixes: "_Names", key: str, used: set[str]) -> object:
    if shape.type_name == "structure":
        return _decode_structure(shape, fields, prefixes, key, used)
    if shape.type_name == "list":
        return _decode_list(shape, fields, prefixes, key, used)
    if shape.type_name == "map":
        return _decode_map(shape, fields, prefixes, key, used)
    if key not in fields:
        return _ABSENT
    used.add(key)
    return _scalar(shape.type_name, fields[key])


def _decode_structure(shape, fields, prefixes, key, used) -> object:
    if key and key not in prefixes:
        return _ABSENT
    decoded = {}
    for name, member in shape.members.items():
        location = member.serialization.get("name", name)
        value = _decode(member, fields, prefixes, f"{key}.{location}" if key else location, used)
        if value is not _ABSENT:
            decoded[name] = value
    return decoded


def _decode_list(shape, fields, prefixes, key, used) -> object:
    if key not in prefixes:
        return _ABSENT
    if fields.get(key) == "":  # botocore's way of sending an empty list
        used.add(key)
        return []
    item_name = shape.member.serialization.get("name", "member")
    base = key if shape.serialization.get("flattened") else f"{key}.{item_name}"
    items = []
    for index in range(1, len(fields) + 1):
        item = _decode(shape.member, fields, prefixes, f"{base}.{index}", used)
        if item is _ABSENT:
            break
        items.append(item)
    return items


def _decode_map(shape, fields, prefixes, key, used) -> object:
    if key not in prefixes:
        return _ABSENT
    key_name = shape.key.serialization.get("name", "key")
    value_name = shape.value.serialization.get("name", "value")
    base = key if shape.serialization.get("flattened") else f"{key}.entry"
    decoded = {}
    for index in range(1, len(fields) + 1):
        entry_key = _decode(shape.key, fields, prefixes, f"{base}.{index}.{key_name}", used)
        if entry_key is _ABSENT:
            break
        decoded[entry_key] = _decode(shape.value, fields, prefixes, f"{base}.{index}.{value_name}", used)
    return decoded


def _scalar(type_name: str, text: str) -> object:
    """The form's text as the JSON value of its type; text that is not one stays text, which the
    validator then refuses as the wrong type."""
    if type_name in ("integer", "long"):
        return int(text) if _INTEGER.match(text) else text
    if type_name in ("float", "double"):
        return _number(text)
    if type_name == "boolean":
        return {"true": True, "false": False}.get(text, text)
    if type_name == "timestamp":
        return _timestamp(text)
    return text


def _number(text: str) -> object:
    try:
        return float(text) if len(text) <= 64 else text
    except ValueError:
        return text


def _timestamp(text: str) -> object:
    """ISO 8601 (what botocore sends) or epoch seconds, as epoch seconds."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return _number(text)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


# --- answers ---------------------------------------------------------------------------------


def _result_document(service, action: str, body: dict, request_id: str) -> ElementTree.Element:
    root = ElementTree.Element(f"{action}Response", xmlns=_namespace(service))
    output = operation_model(service.botocore_name, action).output_shape
    if output is not None:
        result = ElementTree.SubElement(root, output.serialization.get("resultWrapper", f"{action}Result"))
        _fill(result, output, body)
    metadata = ElementTree.SubElement(root, "ResponseMetadata")
    ElementTree.SubElement(metadata, "RequestId").text = request_id
    return root


def _error_document(error: ServiceError, request_id: str, namespace: str) -> ElementTree.Element:
    root = (
        ElementTree.Element("ErrorResponse", xmlns=namespace)
        if namespace
        else ElementTree.Element("ErrorResponse")
    )
    detail = ElementTree.SubElement(root, "Error")
    ElementTree.SubElement(detail, "Type").text = "Sender" if error.status < 500 else "Receiver"
    ElementTree.SubElement(detail, "Code").text = query_error_code(error)
    ElementTree.SubElement(detail, "Message").text = _xml_safe(echo(error.message, MAX_MESSAGE_CHARS))
    ElementTree.SubElement(root, "RequestId").text = request_id
    return root


def _fill(element: ElementTree.Element, shape: Shape, value: object) -> None:
    if shape.type_name == "structure":
        for name, member in shape.members.items():
            if value.get(name) is not None:
                _fill(
                    ElementTree.SubElement(element, member.serialization.get("name", name)),
                    member,
                    value[name],
                )
    elif shape.type_name == "list":
        item_name = shape.member.serialization.get("name", "member")
        for item in value:
            _fill(ElementTree.SubElement(element, item_name), shape.member, item)
    elif shape.type_name == "map":
        for key, item in value.items():
            entry = ElementTree.SubElement(element, "entry")
            _fill(ElementTree.SubElement(entry, shape.key.serialization.get("name", "key")), shape.key, key)
            _fill(
                ElementTree.SubElement(entry, shape.value.serialization.get("name", "value")),
                shape.value,
                item,
            )
    else:
        element.text = _text(value)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return _xml_safe(str(value))


def _xml_safe(text: str) -> str:
    """XML 1.0 cannot carry most control characters (a client's value quoted back may hold them)."""
    return _NOT_XML.sub("\ufffd", text)


def _xml_response(document: ElementTree.Element, status: int, request_id: str) -> HttpResponse:
    payload = ElementTree.tostring(document, encoding="utf-8", xml_declaration=True)
    response = HttpResponse(payload, status=status, content_type=XML_CONTENT_TYPE)
    response["x-amzn-RequestId"] = request_id
    response["Date"] = date_header()
    response["Content-Length"] = str(len(payload))
    return response
