"""The container-credentials endpoint (`GET /v2/credentials`, ECS's path), on the API port.

Containers reach it through the services network's forwarder (gateway/), with the token of
their training job or endpoint in `Authorization`, as botocore's ContainerProvider sends
AWS_CONTAINER_AUTHORIZATION_TOKEN. Unknown or revoked tokens get 403 (SDKs report it as a
credentials error); every answer is JSON and never cached."""

import uuid

from django.http import HttpRequest, HttpResponse, JsonResponse

from accounts.container_credentials import credentials_for
from protocol.errors import AccessDenied, UnknownOperationException
from protocol.serialization import REST_JSON, error_response

CREDENTIALS_PATH = "/v2/credentials"


def container_credentials_view(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        response = _error(UnknownOperationException(f"{CREDENTIALS_PATH} answers GET only."))
        response.status_code = 405
        return response
    credentials = credentials_for(request.headers.get("Authorization", ""))
    if credentials is None:
        return _error(AccessDenied(
            "The authorization token is unknown or its training job or endpoint has ended."
        ))
    response = JsonResponse(credentials.as_json())
    response["Cache-Control"] = "no-store"
    return response


def _error(error: Exception) -> HttpResponse:
    response = error_response(error, str(uuid.uuid4()), content_type=REST_JSON)
    response["Cache-Control"] = "no-store"
    return response
