"""The outermost layer of the API port: AWS-format answers only, whatever happens inside.

Requests carrying X-Amz-Target go straight to the AWS JSON view, whatever their path (boto3
posts them to the endpoint URL's own path), requests with `smithy-protocol: rpc-v2-cbor` to the
CBOR view, and form-encoded POSTs (`Action=...`, the query protocol) to the query view, except
on the admin site, the console and InvokeEndpoint's path. Everything
else goes down Django's chain; an error that comes back without an AWS error type (Django's own
pages: 404, 405, 400 for a bad Host, 500 from a middleware, all HTML or empty) is replaced by an
AWS JSON error with the same class of status, so that no client ever reads HTML from the API.
The admin site and the console keep their own pages, and /healthz, /readyz and /metrics their own bodies.
The Kubernetes-style paths (`/version`, `/api`, `/apis/...`) are never read as the query or CBOR
protocol and keep their own JSON answers; a page of Django's there becomes a Kubernetes `Status`."""

import uuid

from django.http import HttpRequest, HttpResponse, JsonResponse

from protocol import cbor, query
from protocol.errors import (
    AccessDenied,
    InternalFailure,
    RequestEntityTooLarge,
    SerializationException,
    ServiceError,
    UnknownOperationException,
)
from protocol.serialization import AMZ_JSON_11, REST_JSON, error_response
from protocol.shapes import last_path_segments
from protocol.views import json_protocol_view

# Paths that serve HTML on purpose: the admin site, the console and their static files.
_HTML_PREFIXES = ("/admin/", "/console/", "/static/")
# Operations endpoints answer with their own bodies (a 503 from /readyz names the failing part).
_OWN_BODY_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
_RUNTIME_SUFFIXES = last_path_segments("sagemaker-runtime")  # the runtime API's paths end so
# The Kubernetes-style API (elastic/kube/): its clients read Kubernetes JSON, errors included.
_KUBERNETES_PATHS = frozenset({"/version", "/version/", "/api", "/apis"})
_KUBERNETES_PREFIXES = ("/api/", "/apis/")


class AwsErrorsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "x-amz-target" in request.headers:
            return json_protocol_view(request)
        own_protocol = request.path_info.endswith(_RUNTIME_SUFFIXES) or _is_kubernetes(request.path_info)
        if not own_protocol:  # a model may take any body and header; Kubernetes clients send JSON
            if cbor.is_cbor_request(request):
                return cbor.cbor_protocol_view(request)
            if query.is_query_request(request) and not request.path_info.startswith(_HTML_PREFIXES):
                return query.query_protocol_view(request)
        response = self.get_response(request)
        if response.status_code < 400 or "X-Amzn-ErrorType" in response:
            return response
        if request.path_info.startswith(_HTML_PREFIXES) or request.path_info in _OWN_BODY_PATHS:
            return response
        if _is_kubernetes(request.path_info):
            is_ours = response.get("Content-Type") == "application/json"
            return response if is_ours else _kubernetes_status(response)
        content_type = REST_JSON if request.path_info.endswith(_RUNTIME_SUFFIXES) else AMZ_JSON_11
        error = _error_for(response.status_code, request)
        return error_response(error, str(uuid.uuid4()), content_type=content_type)


def _is_kubernetes(path: str) -> bool:
    return path in _KUBERNETES_PATHS or path.startswith(_KUBERNETES_PREFIXES)


def _kubernetes_status(response: HttpResponse) -> HttpResponse:
    """Django's own page (a bad Host header's 400) on a Kubernetes path, as a `Status`."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": response.reason_phrase, "reason": "", "code": response.status_code}
    return JsonResponse(body, status=response.status_code)


def _error_for(status: int, request: HttpRequest) -> ServiceError:
    if status in (404, 405):
        return UnknownOperationException(
            f"No operation answers {request.method[:16]} on this path: send POST with X-Amz-Target "
            "(JSON 1.1), or POST to /endpoints/<name>/invocations (runtime)."
        )
    if status == 413:
        return RequestEntityTooLarge("The request body is too large.")
    if status == 403:
        return AccessDenied("The request was refused.")
    if status < 500:
        return SerializationException("The request could not be read.")
    return InternalFailure("An internal error occurred.")
