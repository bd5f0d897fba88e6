"""The Kubernetes-style views: discovery, and the HyperPodPyTorchJob collection and items.

Every answer is Kubernetes JSON: objects, lists, or a `Status` for any failure (the views catch
their own errors; protocol/middleware.py leaves these paths alone)."""

import base64
import binascii
import functools
import json
import logging

from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, RawPostDataException
from django.http.request import RequestDataTooBig

from elastic import spec, submission
from elastic.kube import discovery, patching, pod_logs, presenter
from elastic.kube.auth import account_of
from elastic.kube.selectors import InvalidSelector, parse_selector
from elastic.kube.status import KubeError, bad_request, json_response, not_found, status_response
from elastic.models import HyperPodJob
from protocol.errors import SerializationException
from protocol.json_body import parse_json_object
from protocol.limits import declared_length

log = logging.getLogger(__name__)

_JSON_TYPES = ("application/json", "")  # "": a client that names no type sends JSON too
# The kubernetes client's patch of a custom object (a dict body) is a JSON merge patch (RFC 7386).
_MERGE_PATCH_TYPES = ("application/merge-patch+json",)


def kube_view(*methods: str):
    """Allow `methods` only, and answer every failure as a Status."""

    def decorate(view):
        @functools.wraps(view)
        def wrapper(request: HttpRequest, **kwargs) -> HttpResponse:
            try:
                if request.method not in methods:
                    raise KubeError(405, "MethodNotAllowed",
                                    f"the server does not allow this method on the requested resource "
                                    f"({request.method[:16]}; allowed: {', '.join(methods)})")
                return view(request, **kwargs)
            except KubeError as error:
                return status_response(error)
            except Exception:  # the last line: a Status, never Django's HTML 500
                log.exception("Kubernetes API request failed: %s %s", request.method, request.path[:200])
                return status_response(KubeError(500, "InternalError", "an internal error occurred"))

        return wrapper

    return decorate


# --- Discovery (unauthenticated, as the API server's public-info role allows) ----------------


@kube_view("GET")
def version(request: HttpRequest) -> HttpResponse:
    return json_response(discovery.version())


@kube_view("GET")
def core_versions(request: HttpRequest) -> HttpResponse:
    return json_response(discovery.core_versions(request.get_host()))


@kube_view("GET")
def groups(request: HttpRequest) -> HttpResponse:
    return json_response(discovery.group_list())


@kube_view("GET")
def group(request: HttpRequest) -> HttpResponse:
    return json_response(discovery.group())


@kube_view("GET")
def resources(request: HttpRequest) -> HttpResponse:
    return json_response(discovery.resource_list())


@kube_view("GET")
def custom_resource_definition(request: HttpRequest, name: str) -> HttpResponse:
    account_of(request)
    if name != discovery.CRD_NAME:
        raise not_found("customresourcedefinitions", "apiextensions.k8s.io", name)
    return json_response(discovery.custom_resource_definition())


@kube_view("GET")
def namespace(request: HttpRequest, name: str) -> HttpResponse:
    account_of(request)
    if not spec.is_dns_label(name):
        raise not_found("namespaces", "", name)
    return json_response(discovery.namespace(name))


@kube_view("GET")
def pod_log(request: HttpRequest, namespace: str, pod: str) -> HttpResponse:
    """A replica's output, as the kubelet serves it (plain text), from its log stream."""
    account_id = account_of(request)
    _check_namespace(namespace)
    text = pod_logs.pod_log(account_id, namespace, pod, request.GET)
    return HttpResponse(text, content_type="text/plain")


@kube_view("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
def unknown_path(request: HttpRequest, **kwargs) -> HttpResponse:
    raise KubeError(404, "NotFound", "the server could not find the requested resource")


# --- HyperPodPyTorchJobs ---------------------------------------------------------------------


@kube_view("GET")
def all_jobs(request: HttpRequest) -> HttpResponse:
    return _list(request, account_of(request), namespace=None)


@kube_view("GET", "POST")
def namespace_jobs(request: HttpRequest, namespace: str) -> HttpResponse:
    account_id = account_of(request)
    _check_namespace(namespace)
    if request.method == "POST":
        return _create(request, account_id, namespace)
    return _list(request, account_id, namespace)


@kube_view("GET", "PATCH", "DELETE")
def job(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    account_id = account_of(request)
    _check_namespace(namespace)
    found = _jobs(account_id).filter(namespace=namespace, name=name).first()
    if found is None:
        raise not_found(discovery.PLURAL, discovery.GROUP, name)
    if request.method == "PATCH":
        return _patch(request, found)
    if request.method == "DELETE":
        if not _dry_run(request):
            found = submission.request_deletion(found)
    return json_response(presenter.job_object(found))


def _create(request: HttpRequest, account_id: str, namespace: str) -> HttpResponse:
    manifest = _body(request)
    metadata = manifest.get("metadata")
    if isinstance(metadata, dict) and metadata.get("namespace") not in (None, namespace):
        raise bad_request("the namespace of the provided object does not match the namespace sent "
                          "on the request")
    errors = spec.validate(manifest)
    if errors:
        raise _invalid(manifest, errors)
    try:
        created = submission.submit(account_id, namespace, manifest, dry_run=_dry_run(request))
    except submission.NameTaken as taken:
        name = str(taken)
        raise KubeError(409, "AlreadyExists",
                        f'{discovery.PLURAL}.{discovery.GROUP} "{name}" already exists',
                        {"name": name, "group": discovery.GROUP, "kind": discovery.PLURAL}) from None
    warnings = [f"unknown field {path}" for path in spec.unknown_fields(manifest)]
    return json_response(presenter.job_object(created), status=201, warnings=warnings)


def _patch(request: HttpRequest, found: HyperPodJob) -> HttpResponse:
    """A merge patch that may change `spec.runPolicy.suspend` only (suspend and resume, as Kueue
    and users do on HyperPod); a change to any other field is refused naming it."""
    body = _body(request, _MERGE_PATCH_TYPES)
    current = {"apiVersion": spec.API_VERSION, "kind": spec.KIND, **found.manifest}
    merged = patching.merge_patch(current, {key: body[key] for key in body if key != "status"})
    changed = patching.changed_fields(current, merged, ignored=patching.IGNORED_ON_PATCH)
    refused = [spec.FieldError(path, "is immutable: only spec.runPolicy.suspend may be patched")
               for path in changed if path != "spec.runPolicy.suspend"]
    suspend = ((merged.get("spec") or {}).get("runPolicy") or {}).get("suspend")
    if suspend is not None and not isinstance(suspend, bool):
        refused.append(spec.FieldError("spec.runPolicy.suspend", "must be a boolean"))
    if refused:
        raise _invalid(current, refused)
    if _dry_run(request):  # the object as it would be, nothing stored
        found.manifest = submission.with_suspend(found.manifest, bool(suspend))
    else:
        found = submission.set_suspend(found, bool(suspend))
    return json_response(presenter.job_object(found))


def _invalid(manifest: dict, errors: list[spec.FieldError]) -> KubeError:
    metadata = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else ""
    causes = [{"reason": "FieldValueInvalid", "message": f"Invalid value: {e.message}", "field": e.field}
              for e in errors[:50]]
    message = f'{spec.KIND}.{discovery.GROUP} "{name[:253]}" is invalid: ' + ", ".join(map(str, errors[:50]))
    return KubeError(422, "Invalid", message, {"name": name[:253], "group": discovery.GROUP,
                                                "kind": spec.KIND, "causes": causes})


def _list(request: HttpRequest, account_id: str, namespace: str | None) -> HttpResponse:
    if request.GET.get("watch") in ("true", "1"):
        raise bad_request("watch is not supported: list again to see changes")
    labels = _selector(request, "labelSelector")
    fields = _selector(request, "fieldSelector")
    limit = _limit(request)
    jobs = _jobs(account_id).order_by("namespace", "name")
    if namespace is not None:
        jobs = jobs.filter(namespace=namespace)
    if request.GET.get("continue"):
        after, after_name = _decode_continue(request.GET["continue"])
        jobs = jobs.filter(Q(namespace__gt=after) | Q(namespace=after, name__gt=after_name))
    page = []
    for candidate in jobs.iterator():
        if not labels(candidate.manifest.get("metadata", {}).get("labels") or {}):
            continue
        if not fields({"metadata.name": candidate.name, "metadata.namespace": candidate.namespace}):
            continue
        if limit and len(page) == limit:
            return json_response(presenter.job_list(page, _encode_continue(page[-1])))
        page.append(candidate)
    return json_response(presenter.job_list(page))


def _jobs(account_id: str):
    return HyperPodJob.objects.filter(account_id=account_id, region=settings.SAGEPORT_REGION)


def _check_namespace(namespace: str) -> None:
    if not spec.is_dns_label(namespace):
        raise bad_request(f"namespace {namespace[:80]!r} is not a DNS-1123 label")


def _dry_run(request: HttpRequest) -> bool:
    values = request.GET.getlist("dryRun")
    if any(value != "All" for value in values):
        raise bad_request("dryRun may only be All")
    return bool(values)


def _selector(request: HttpRequest, parameter: str):
    try:
        return parse_selector(request.GET.get(parameter, ""))
    except InvalidSelector as error:
        raise bad_request(f"invalid {parameter}: {error}") from None


def _limit(request: HttpRequest) -> int:
    text = request.GET.get("limit", "0")
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise bad_request("limit must be a non-negative integer")
    return int(text)


def _encode_continue(last: HyperPodJob) -> str:
    return base64.urlsafe_b64encode(json.dumps([last.namespace, last.name]).encode()).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()[:1024]))
        if isinstance(namespace, str) and isinstance(name, str):
            return namespace, name
    except (binascii.Error, ValueError, TypeError):
        pass
    raise bad_request("the continue token is not valid")


def _body(request: HttpRequest, types: tuple[str, ...] = _JSON_TYPES) -> dict:
    limit = settings.SAGEPORT_MAX_REQUEST_BYTES
    if declared_length(request) > limit:
        raise _too_large(limit)
    content_type = request.content_type or ""
    if content_type not in types:
        raise KubeError(415, "UnsupportedMediaType",
                        f"the body of the request was in an unknown format - accepted media types "
                        f"include: {types[0]} (got {content_type[:80]!r})")
    try:
        raw = request.body
    except (RequestDataTooBig, RawPostDataException):
        raise _too_large(limit) from None
    if len(raw) > limit:
        raise _too_large(limit)
    if not raw:
        raise bad_request("the request has no body: send the HyperPodPyTorchJob as JSON")
    try:
        return parse_json_object(raw)
    except SerializationException as error:
        raise bad_request(error.message) from None


def _too_large(limit: int) -> KubeError:
    return KubeError(413, "RequestEntityTooLarge", f"the request body must be at most {limit} bytes")
