"""Kubernetes answers: objects as JSON, and failures as `Status` objects (never an AWS error body,
never an HTML page), the way the API server writes them."""

import json

from django.http import HttpResponse


class KubeError(Exception):
    """A failure answered as a `Status`: `reason` is Kubernetes' StatusReason."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}


def not_found(plural: str, group: str, name: str) -> KubeError:
    resource = f"{plural}.{group}" if group else plural
    return KubeError(404, "NotFound", f'{resource} "{name[:253]}" not found',
                     {"name": name[:253], "group": group, "kind": plural})


def bad_request(message: str) -> KubeError:
    return KubeError(400, "BadRequest", message)


def json_response(body: dict, status: int = 200, warnings: list[str] = ()) -> HttpResponse:
    response = HttpResponse(json.dumps(body), status=status, content_type="application/json")
    if warnings:
        # What the API server sends for pruned fields; the kubernetes client logs it.
        response["Warning"] = ", ".join(f'299 - "{_header_safe(text)}"' for text in warnings)
    response["Cache-Control"] = "no-cache, private"
    return response


def status_response(error: KubeError) -> HttpResponse:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": error.message[:8192],
        "reason": error.reason,
        "details": error.details,
        "code": error.code,
    }
    response = json_response(body, status=error.code)
    if error.code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="sageport"'
    return response


def _header_safe(text: str) -> str:
    return "".join(c for c in text[:200] if 32 <= ord(c) < 127 and c not in '"\\')
