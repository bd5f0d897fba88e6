"""The runtime API on the API's port: the data plane's own application (dataplane.py) answers the
runtime requests Django receives there, so that one implementation serves both ports.

Clients are pointed at the data plane (its own port, built for this path). The API's port serves
the containers, which reach only the API (through their forwarder, gateway/), and clients given a
single endpoint URL. Each API process runs the data plane's application on an event loop of its
own, in a thread started by the process's first runtime request (after gunicorn's fork); Django's
view hands it the request as ASGI messages and waits for the answer, read whole. Streams are not
served here: the API's threads are too few to be held by them (contract.DATA_PLANE_ONLY), and
the application answers them as an unserved operation naming the data plane's port.

What the application does off its loop (the database, Redis, S3: `asyncio.to_thread`) runs in
the request's own thread, which waits for the answer anyway (`_RequestThread`): the database is
used from the thread Django handles the request in, on that thread's connection, as for every
other API request, and an API process opens no connections of its own for the runtime API."""

import asyncio
import contextvars
import functools
import logging
import os
import queue
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor

import uvloop
from django.http import HttpRequest, HttpResponse
from django.urls import resolve

from hosting.runtime_api import contract
from hosting.runtime_api.dataplane import DataPlane, serving_app
from protocol.authentication import raw_target
from protocol.errors import InternalFailure
from protocol.limits import declared_length
from protocol.serialization import REST_JSON, error_response

log = logging.getLogger(__name__)

# The last part of every runtime path (contract.runtime_path_suffixes): the control plane's
# requests are told apart by it before any URL is resolved.
_SUFFIXES = contract.runtime_path_suffixes()


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
    try:
        return _served(request, _process_loop())
    except Exception:
        log.exception("runtime request not served on the API port")
        error = InternalFailure("An internal error occurred.")
        return error_response(error, str(uuid.uuid4()), content_type=REST_JSON)


class _ServingLoop:
    """This process's event loop, in a thread of its own, and the application it runs."""

    def __init__(self, app: DataPlane):
        self.app = app
        self.loop = uvloop.new_event_loop()
        self.loop.set_default_executor(_RequestThreads())
        threading.Thread(target=self.loop.run_forever, name="runtime-api", daemon=True).start()

    def answer(self, exchange) -> None:
        """Run the application's exchange on the loop; return once it is over."""
        waiting = _RequestThread()

        async def run() -> None:
            _request_thread.set(waiting)  # in this task's context: what it hands off goes to `waiting`
            await exchange

        waiting.serve_until(asyncio.run_coroutine_threadsafe(run(), self.loop))


class _RequestThread:
    """A request's thread while it waits for its answer: it runs what the application hands off."""

    def __init__(self):
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._waiting = True

    def take(self, call) -> Future | None:
        """`call`'s future, to be run by the waiting thread; None once it no longer waits."""
        with self._lock:
            if not self._waiting:
                return None
            future: Future = Future()
            self._work.put((call, future))
            return future

    def serve_until(self, answered: Future) -> None:
        answered.add_done_callback(lambda _: self._work.put(None))
        while (work := self._work.get()) is not None:
            _run(*work)
        with self._lock:
            self._waiting = False
        while not self._work.empty():  # handed off as the answer ended: still run, not dropped
            if (work := self._work.get()) is not None:
                _run(*work)
        answered.result()


def _run(call, future: Future) -> None:
    if future.set_running_or_notify_cancel():
        try:
            future.set_result(call())
        except BaseException as error:
            future.set_exception(error)


# The request thread of the task running on the loop (unset outside a request's task).
_request_thread: contextvars.ContextVar[_RequestThread | None] = contextvars.ContextVar(
    "runtime_api_request_thread", default=None
)


class _RequestThreads(ThreadPoolExecutor):
    """The loop's executor: work handed off by a request's task goes to its waiting thread; any
    other (none is expected) to a thread of the pool."""

    def __init__(self):
        super().__init__(max_workers=2, thread_name_prefix="runtime-api-spare")

    def submit(self, fn, /, *args, **kwargs) -> Future:
        waiting = _request_thread.get()
        call = functools.partial(fn, *args, **kwargs)
        future = waiting.take(call) if waiting is not None else None
        return future if future is not None else super().submit(call)


@functools.cache
def _loop_of(process_id: int) -> _ServingLoop:
    return _ServingLoop(serving_app(streams=False))


def _process_loop() -> _ServingLoop:
    """Created in the process that serves (a loop's thread does not survive a fork)."""
    return _loop_of(os.getpid())


def _served(request: HttpRequest, serving: _ServingLoop) -> HttpResponse:
    answer = _Answer()
    serving.answer(serving.app(_scope(request), _Receive(_body(request)), answer.take))
    return answer.response()


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
            response[name.decode("latin-1")] = value.decode("latin-1")
        return response
