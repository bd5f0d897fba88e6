"""`/`: a browser is sent to the console; anything an AWS client sends stays with the API.

Requests carrying `X-Amz-Target` never get here (protocol.middleware dispatches them first); a
request with an `Authorization` header, or any method but GET/HEAD, is the API's to answer."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from protocol.views import json_protocol_view


def root(request: HttpRequest) -> HttpResponse:
    if request.method in ("GET", "HEAD") and "authorization" not in request.headers:
        return redirect("console:home")
    return json_protocol_view(request)
