"""SigV4 authentication of a request (Django's, or one the runtime data plane read): the entry
point both APIs (JSON 1.1 and the runtime REST API) call before anything else."""

from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from django.utils.module_loading import import_string

from protocol import regions, sigv4
from protocol.context import RequestContext


def authenticate(
    request: HttpRequest,
    *,
    signing_name: str = "sagemaker",
    request_id: str | None = None,
    must_sign: Iterable[str] = (),
) -> RequestContext:
    """Verify the request's SigV4 signature for `signing_name` (the service in the credential
    scope) and return its context; raise a 403 ServiceError (as AWS answers a bad signature) otherwise.
    `must_sign`: lower-case names of further headers the caller acts on (refused unsigned)."""
    return authenticate_signed(
        signed_request(request), signing_name=signing_name, request_id=request_id, must_sign=must_sign
    )


def authenticate_signed(
    request: sigv4.SignedRequest,
    *,
    signing_name: str = "sagemaker",
    request_id: str | None = None,
    must_sign: Iterable[str] = (),
) -> RequestContext:
    """`authenticate` for a request read by another server than Django's (the runtime data plane)."""
    context = sigv4.verify(
        request,
        signing_name=signing_name,
        must_sign=must_sign,
        # Resolved on each call so tests and deployments can point the setting elsewhere.
        resolve=import_string(settings.SAGEPORT_CREDENTIAL_RESOLVER),
        now=timezone.now(),
        max_skew=timedelta(seconds=settings.SAGEPORT_SIGV4_MAX_SKEW_SECONDS),
        regions=own_regions(),
    )
    return replace(context, request_id=request_id) if request_id else context


def own_regions() -> frozenset[str]:
    """The regions a scope may name: AWS's, and the ones this stack is configured with."""
    return regions.accepted((settings.SAGEPORT_REGION, settings.SAGEPORT_S3_REGION))


def signed_request(request: HttpRequest) -> sigv4.SignedRequest:
    headers = {name.lower(): value for name, value in request.headers.items()}
    return sigv4.SignedRequest(request.method, raw_target(request), headers, request.body)


def raw_target(request: HttpRequest) -> str:
    """The request target as the client sent it. The signature covers the undecoded path, so
    prefer the server's copy of the request line where it gives one (gunicorn: RAW_URI; uWSGI:
    REQUEST_URI). granian, the API's server, gives none: the decoded path is quoted again, which
    is the client's path unless that encoded a reserved character such as a slash (no valid path
    of the served APIs does)."""
    for key in ("RAW_URI", "REQUEST_URI"):
        if request.META.get(key):
            return request.META[key]
    query = request.META.get("QUERY_STRING", "")
    return sigv4.requote_path(request.path) + (f"?{query}" if query else "")
