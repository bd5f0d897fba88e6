"""The runtime API on the API's port: the data plane's own application (dataplane.py) answers the
runtime requests Django receives there, so that one implementation serves both ports.

Clients and containers (through their forwarder, gateway/) are pointed at the data plane (its own
port, built for this path). The API's port serves clients given a single endpoint URL. Each
runtime request takes an event loop no other request is using (made
when none is free), with the application on it: Django's view hands it the request as ASGI
messages and runs the loop in the request's thread until the answer, read whole, is complete.
The loop serves that one request, so what the application does off its loop elsewhere
(`asyncio.to_thread`: the database, Redis, S3) runs inline here (`_InThisThread`), on Django's
database connection for the thread, as for every API request. Measured against one loop per
process in a thread of its own, which every request handed its work to and waited on: 960 and
929 req/s against 907 and 817, signed InvokeEndpoint with 8 clients, alternate stacks
(docs/performance.md).

Streams are not served here: the API's threads are too few to be held by them
(contract.DATA_PLANE_ONLY), and the application answers them as an unserved operation naming the
data plane's port."""

import asyncio
import logging
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import uvloop
from django.http import HttpRequest, HttpResponse
from django.urls import resolve

from hosting.runtime_api import contract
from hosting.runtime_api.dataplane import serving_app
from protocol.authentication import raw_target
from protocol.errors import InternalFailure
from protocol.limits import declared_length
from protocol.serialization import REST_JSON, error_response
from protocol.shapes import last_path_segments

log = logging.getLogger(__name__)

# The last part of every runtime path: the control plane's requests are told apart by it before
# any URL is resolved.
_SUFFIXES = last_path_segments("sagemaker-runtime")


class RuntimeApiMiddleware:
    """Serves the runtime API ahead of the middleware listed after this one (the admin's sessions,
    users and messages), which the data path never uses but would pay for on every request.
    The route is still found by the URLconf; everything else goes down the chain unchanged."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.endswith(_SUFFIXES):  # cheap test first: the control plane pays nothing
            match = resolve(request.path_info)
            if match.func is runtime_view:
                request.resolver_match = match
                return match.func(request, *match.args, **match.kwargs)
        return self.get_response(request)


def runtime_view(request: HttpRequest, **_path_parts) -> HttpResponse:
    """Every runtime path (the data plane tells the operations apart, as on its own port)."""
    serving = _take()
    try:
        return _served(request, serving)
    except Exception:
        log.exception("runtime request not served on the API port")
        error = InternalFailure("An internal error occurred.")
        return error_response(error, str(uuid.uuid4()), content_type=REST_JSON)
    finally:
        _idle.append(serving)


class _Serving:
    """An event loop and the application on it, used by one request at a time."""

    def __init__(self):
        self.loop = uvloop.new_event_loop()
        self.loop.set_default_executor(_InThisThread())
        self.app = serving_app(streams=False)


# The loops no request is using. Last in, first out: the loop used last has the connections
# most likely still open. Not a loop per thread: granian ends request threads that stay idle,
# and a thread's loop was then dropped with its connections open (uvloop frees nothing of a loop
# that was not closed).
_idle: deque[_Serving] = deque()


def _take() -> _Serving:
    """Made in the worker process that serves (the server forks its workers before any request,
    so no loop crosses a fork)."""
    try:
        return _idle.pop()
    except IndexError:
        return _Serving()


class _InThisThread(ThreadPoolExecutor):
    """The loop's executor: what the application hands off its loop runs at once, in the request's
    thread. Django's ORM refuses to run while a loop runs in its thread; this loop waits on the
    call, so it is set aside for the call's length."""

    def __init__(self):
        super().__init__(max_workers=1)  # never started: nothing is submitted to the pool itself

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        future.set_running_or_notify_cancel()
        running = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(None)
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:
            future.set_exception(error)
        finally:
            asyncio.events._set_running_loop(running)
        return future


def _served(request: HttpRequest, serving: _Serving) -> HttpResponse:
    answer = _Answer()
    exchange = serving.app(_scope(request), _Receive(_body(request)), answer.take)
    serving.loop.run_until_complete(_after_idle_events(exchange))
    return answer.response()


async def _after_idle_events(exchange) -> None:
    """The loop stood still since its last request: what its kept connections received
    meanwhile (a container closing one, or answering unasked, as a server's 408 on an idle
    connection) is only read now. Two turns of the loop first (one reads, one runs the closes it
    scheduled), so that such a connection leaves the pool instead of carrying this request, whose
    answer those bytes would otherwise be taken for."""
    for _ in range(2):
        await asyncio.sleep(0)
    await exchange


def _body(request: HttpRequest) -> bytes:
    """The body, unless its declared length is refused anyway (the application refuses it on the
    Content-Length header alone, as on its own port, without reading it)."""
    if declared_length(request) > contract.MAX_BODY_BYTES:
        return b""
    return request.body


def _scope(request: HttpRequest) -> dict:
    target = raw_target(request)  # the signature covers the path as sent
    raw_path, _, query = target.partition("?")
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1"))
               for name, value in request.headers.items()]
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "scheme": request.scheme,
        "method": request.method, "path": request.path_info, "raw_path": raw_path.encode("latin-1"),
        "query_string": query.encode("latin-1"), "headers": headers,
    }


class _Receive:
    """The request's body in one message; after it, nothing (the answer is read whole, so the
    application never waits for the client's disconnect)."""

    def __init__(self, body: bytes):
        self._body: bytes | None = body

    async def __call__(self) -> dict:
        if self._body is None:
            await asyncio.Event().wait()  # never set: cancelled with whatever awaits it
        body, self._body = self._body, None
        return {"type": "http.request", "body": body, "more_body": False}


class _Answer:
    """The application's answer, collected from its ASGI messages."""

    def __init__(self):
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.parts: list[bytes] = []

    async def take(self, message: dict) -> None:
        if message["type"] == "http.response.start":
            self.status, self.headers = message["status"], message.get("headers", [])
        elif message["type"] == "http.response.body":
            self.parts.append(message.get("body", b""))

    def response(self) -> HttpResponse:
        response = HttpResponse(b"".join(self.parts), status=self.status)
        del response["Content-Type"]  # only the application's, when it gives one
        for name, value in self.headers:
            if name != b"date":  # granian dates every answer itself
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response
