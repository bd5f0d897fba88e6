"""The data plane: InvokeEndpoint (`POST [<prefix>/]endpoints/<name>/invocations`, REST-JSON) on a
port of its own, a raw ASGI app served by uvicorn (asgi.py; devstack/stack.py `runtime_spec`).
The API's port serves the same app (api_port.py): one implementation of the runtime API.

Built for the hot path: one event loop per process, no Django request stack. Django (set up by
asgi.py) is there for the ORM, used only off the loop (a thread): the routing table's loads
(hosting/runtime_api/router.py, refreshed in the background when a change is announced), an
access key not yet remembered (accounts/accesskeys.py), the asynchronous queue, the serverless
slots. A request reads its body (≤ 6 MB), verifies SigV4 (protocol/sigv4.py, with cached signing
keys), validates its headers against the botocore shape, picks a container from the in-memory
table (counted in flight there for drains), and forwards over a pooled keep-alive connection
(upstream.py). InvokeEndpointAsync is queued (async_invocations.py); the other runtime
operations' paths answer 501 NotImplementedException once authenticated. Refusals, routing and
errors are contract.py's."""

import asyncio
import email.utils
import functools
import logging
import re
import time
import uuid

from django.conf import settings
from django.core.exceptions import SynchronousOnlyOperation

from hosting.runtime_api import (
    async_invocations,
    components,
    contract,
    multi_model,
    serverless_gate,
    streaming,
)
from hosting.runtime_api.exchange import Answer, NoAnswer, Refused, TimedOut
from hosting.runtime_api.invocation_metrics import Invocation
from hosting.runtime_api.router import Choice, Router, get_router, usable
from hosting.runtime_api.tries import Tries
from hosting.runtime_api.upstream import Upstream
from protocol.arns import make_arn
from protocol.authentication import authenticate_signed
from protocol.context import RequestContext
from protocol.errors import InternalFailure, ServiceError, UnknownOperationException
from protocol.serialization import REST_JSON, error_response
from protocol.sigv4 import SignedRequest

log = logging.getLogger(__name__)

_INVOCATIONS = re.compile(r"^(?:.*/)?endpoints/(?P<endpoint_name>[^/]+)/invocations$")
_STREAM = re.compile(r"^(?:.*/)?endpoints/(?P<endpoint_name>[^/]+)/invocations-response-stream$")
_RESPONSE_HEADERS = tuple((name, name.lower().encode()) for name in contract.RESPONSE_HEADERS)


class _ClientGone(Exception):
    """The client disconnected before its body arrived: there is no one to answer."""


class DataPlane:
    """The ASGI application (asgi.py's `app`, and the API port's through api_port.py); tests build
    their own with a router and an upstream. `streams`: whether InvokeEndpointWithResponseStream
    is served (else it answers as an unserved operation, naming the port that serves it)."""

    def __init__(self, router: Router, upstream: Upstream, streams: bool = True):
        self.router = router
        self.upstream = upstream
        self.streams = streams

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:  # the first request would load the table otherwise; the database may be away
                    await asyncio.to_thread(self.router.start)
                except Exception as error:
                    log.warning("routing table not loaded at start (the first request loads it): %s", error)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.upstream.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope, receive, send) -> None:
        started = time.perf_counter()
        request = _Request(scope)
        try:
            reply = await self._answer(request, receive)
        except _ClientGone:
            return
        except ServiceError as error:
            reply = _error(error, request.id)
        except Exception:
            log.exception("unhandled error in %s (request id %s)", request.operation, request.id)
            reply = _error(InternalFailure("An internal error occurred."), request.id)
        if isinstance(reply, streaming.Relay):
            status = await _relay(reply, request, send, receive)
        else:
            status, headers, body = reply
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        if request.endpoint_name is not None:
            contract.observe(request.route_labels, status, time.perf_counter() - started, request.invocation)

    async def _answer(self, request: "_Request", receive) -> "tuple[int, list, bytes] | streaming.Relay":
        path = request.scope["path"]
        asynchronous = async_invocations.PATH.match(path)
        if asynchronous is not None:
            return await self._invoke_async(request, receive, asynchronous["endpoint_name"])
        match = _INVOCATIONS.match(path)
        if match is None and self.streams and (match := _STREAM.match(path)):
            request.operation = contract.STREAM
        if match is None and contract.unserved_operation(path):
            headers = request.headers()
            await _authenticate(request, headers, await _read_body(headers, receive))
            raise contract.unserved(path)
        if match is None:
            raise UnknownOperationException(
                f"No operation answers {request.method[:16]} on this path: the runtime API is "
                "POST /endpoints/<name>/invocations (InvokeEndpoint) and "
                "POST /endpoints/<name>/invocations-response-stream (InvokeEndpointWithResponseStream)."
            )
        endpoint_name = request.endpoint_name = match["endpoint_name"]
        if request.method != "POST":
            raise contract.wrong_method(request.method)
        headers = request.headers()
        body = await _read_body(headers, receive)
        ctx = await _authenticate(request, headers, body)
        params = contract.params(endpoint_name, headers, request.operation)
        arn = make_arn(ctx.region, ctx.account_id, "endpoint", endpoint_name)
        target = params.get("TargetVariant")
        route = self.router.lookup(arn)
        if not usable(route):  # unknown here, or not yet InService: the database may know better
            route = await asyncio.to_thread(self.router.route, arn)
        contract.check_route(route, ctx, endpoint_name, target)
        if components.applies(route, params):  # to the named inference component's copies
            arn, route = await asyncio.to_thread(
                components.resolve, self.router, ctx, endpoint_name, arn, params
            )
        request.route_labels = (ctx.account_id, endpoint_name, target or "")
        forwarded = contract.forwarded_headers(params)
        multi = multi_model.check(route, params, endpoint_name)  # a stream has no TargetModel: refused
        if request.operation == contract.STREAM:
            serverless_gate.refuse_stream(route, endpoint_name)
            tries = Tries(self.router, arn, target, ctx, endpoint_name)
            relay = await streaming.open_relay(tries, self.upstream, body, forwarded, request)
            request.route_labels = (ctx.account_id, endpoint_name, relay.choice.variant_name)
            return relay
        if multi:
            note = functools.partial(setattr, request, "invocation")
            answer, choice = await multi_model.forward(
                self.router, self.upstream, arn, ctx, endpoint_name, params, body, forwarded, note
            )
        else:
            # A serverless endpoint: a concurrency slot, and a container (cold-started if need be).
            admission = await serverless_gate.admit(
                self.router, route, arn, target, ctx, endpoint_name, request.id
            )
            try:
                answer, choice = await self._forward(request, ctx, arn, target, body, forwarded)
            finally:
                await serverless_gate.leave_async(admission)
        request.route_labels = (ctx.account_id, endpoint_name, choice.variant_name)
        if not 200 <= answer.status < 300:
            raise contract.model_error(ctx, endpoint_name, answer.status, answer.body)
        return 200, _success_headers(answer, choice, request.id), answer.body

    async def _invoke_async(self, request: "_Request", receive,
        endpoint_name: str) -> tuple[int, list, bytes]:
        """InvokeEndpointAsync: the queueing is async_invocations.py's, in a thread (the database)."""
        if request.method != "POST":
            raise contract.wrong_method(request.method)
        headers = request.headers()
        body = await _read_body(headers, receive)
        ctx = await _authenticate(request, headers, body, async_invocations.SIGNED_HEADERS)
        accepted = await asyncio.to_thread(async_invocations.invoke, ctx, endpoint_name, headers)
        answer = [(name.lower().encode(), value.encode()) for name, value in accepted.headers().items()]
        answer += [(b"x-amzn-requestid", request.id.encode()), (b"date", _http_date())]
        return 202, answer, accepted.body()

    async def _forward(
        self, request: "_Request", ctx: RequestContext, arn: str, target, body: bytes, headers: dict
    ) -> tuple[Answer, Choice]:
        """Send the request to a container, another one while they refuse it (tries.py); the
        exchange is noted (`request.invocation`) for the endpoint's CloudWatch metrics."""
        tries = Tries(self.router, arn, target, ctx, request.endpoint_name)
        while True:
            choice = tries.choose()
            status = 0
            try:
                answer = await self.upstream.post(choice.backend.address, choice.backend.port, body, headers)
                status = answer.status
                return answer, choice
            except (Refused, NoAnswer, TimedOut) as error:
                tries.failed(choice, error)
            finally:
                request.invocation = tries.ended(choice, status)


class _Request:
    """What the data plane notes about one request while answering it."""

    __slots__ = ("scope", "method", "id", "operation", "endpoint_name", "route_labels", "invocation")

    def __init__(self, scope):
        self.scope = scope
        self.method: str = scope["method"]
        self.id = str(uuid.uuid4())
        self.operation = "InvokeEndpoint"  # or contract.STREAM, by the path
        self.endpoint_name: str | None = None  # set once the path is InvokeEndpoint's
        self.route_labels = contract.UNROUTED
        self.invocation: Invocation | None = None

    def headers(self) -> dict[str, str]:
        """By lower-case name (as uvicorn gives them); a repeated header's values joined by commas,
        as SigV4's canonical form joins them."""
        found: dict[str, str] = {}
        for raw_name, raw_value in self.scope["headers"]:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            found[name] = f"{found[name]},{value}" if name in found else value
        return found

    def raw_target(self) -> str:
        """The request target as sent (the signature covers the undecoded path)."""
        path = self.scope.get("raw_path") or self.scope["path"].encode()
        query = self.scope.get("query_string") or b""
        return (path + b"?" + query if query else path).decode("latin-1")


async def _read_body(headers: dict[str, str], receive) -> bytes:
    """The whole body (authentication hashes it), refused past 6 MB: at once when the declared
    length says so, else as soon as what arrived does."""
    try:
        declared = int(headers.get("content-length") or 0)
    except ValueError:
        declared = 0
    if declared > contract.MAX_BODY_BYTES:
        raise contract.too_large()
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > contract.MAX_BODY_BYTES:
            raise contract.too_large()
        chunks.append(chunk)
        if not message.get("more_body"):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)  # one chunk: no copy


async def _authenticate(
    request: _Request, headers: dict[str, str], body: bytes, must_sign: tuple[str, ...] | None = None
) -> RequestContext:
    """SigV4 on the loop while the access key is remembered (accounts/accesskeys.py), which is
    nearly always; otherwise Django refuses the database query there, and the check runs again
    in a thread. `must_sign`: the headers that must be signed, by default the operation's."""
    signed = SignedRequest(request.method, request.raw_target(), headers, body)
    if must_sign is None:
        stream = request.operation == contract.STREAM
        must_sign = contract.STREAM_SIGNED_HEADERS if stream else contract.FORWARDED_HEADERS

    def verify() -> RequestContext:
        return authenticate_signed(signed, request_id=request.id, must_sign=must_sign)

    try:
        return verify()
    except SynchronousOnlyOperation:
        return await asyncio.to_thread(verify)


async def _relay(relay: "streaming.Relay", request: _Request, send, receive) -> int:
    """Send a stream's answer; a failure once it began can only be logged (the head is sent)."""
    try:
        await relay.send(send, receive, _http_date())
    except Exception:
        log.exception("stream of %s ended by an error (request id %s)", request.endpoint_name, request.id)
    return 200


def _success_headers(answer: Answer, choice: Choice, request_id: str) -> list[tuple[bytes, bytes]]:
    headers = [
        (b"content-length", str(len(answer.body)).encode()),
        (b"x-amzn-invoked-production-variant", choice.variant_name.encode()),
        (b"x-amzn-requestid", request_id.encode()),
        (b"date", _http_date()),
    ]
    content_type = answer.headers.get("Content-Type")
    if content_type:
        headers.append((b"content-type", content_type.encode("latin-1")))
    for name, raw_name in _RESPONSE_HEADERS:
        value = answer.headers.get(name)
        if value is not None:
            headers.append((raw_name, value.encode("latin-1")))
    return headers


def _error(error: ServiceError, request_id: str) -> tuple[int, list, bytes]:
    """The REST-JSON error the API's view answers (protocol/serialization.py), as ASGI parts."""
    response = error_response(error, request_id, content_type=REST_JSON)
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in response.items()]
    return response.status_code, headers, response.content


_date_cache: tuple[int, bytes] = (0, b"")


def _http_date() -> bytes:
    """The Date header, formatted once a second."""
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache = (now, email.utils.formatdate(now, usegmt=True).encode())
    return _date_cache[1]


def serving_app(streams: bool = True) -> DataPlane:
    """The process's application: its router (router.py), a client of its own for its loop."""
    return DataPlane(get_router(), Upstream(settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS), streams)
