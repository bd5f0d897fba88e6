"""InvokeEndpointWithResponseStream on the data plane (dataplane.py reads, authenticates and
routes the request as InvokeEndpoint's): the container's answer relayed as it arrives, each HTTP
chunk of it (or each piece its socket delivers, for an answer that is not chunked) as one
`PayloadPart` event (eventstream.py), so that a token the container wrote reaches the client
without waiting for the rest. The pieces already buffered when one arrives go with it, each its
own event, in one ASGI `send` (at most about BATCH_BYTES): a fast stream of small tokens costs
one write per burst instead of one per token, and the first piece never waits for others.

Before the answer's head, everything is InvokeEndpoint's (contract.py): a container that refuses
the connection is passed over, one that fails or answers non-2xx is a ModelError (424). Once the
head is 2xx the client has its 200, and what goes wrong later ends the stream with a
`ModelStreamError` event as SageMaker sends it: `StreamBroken` (the container closed or reset the
connection) or `ModelInvocationTimeExceeded` (the whole answer took longer than the invocation
timeout, which the drain of a replaced container also waits for). What is not the model's doing
ends it with `InternalStreamFailure`, SageMaker's "try your request again": an unexpected error
in the relay, or the data plane stopping (its graceful shutdown over) with the stream still open,
so that the client learns the answer is cut short instead of reading a truncated body.

The container's answer is read by the data plane's own client (upstream.py: one parse per socket
read, the pieces queued by its callbacks). One batch is in flight at a time: the next is
taken only once the client's connection took the last one (uvicorn's `send` waits while its
transport is full), and the container's socket is not read while more than about 256 KB of its
answer wait, so a slow client slows the container down instead of making the data plane hold its
answer. The container stays counted in
flight (router.py) until the stream ends, so a blue/green drain waits for open streams."""

import asyncio
import logging

from hosting.runtime_api import contract, eventstream
from hosting.runtime_api.exchange import NoAnswer, Refused, TimedOut
from hosting.runtime_api.router import Choice
from hosting.runtime_api.tries import Tries
from hosting.runtime_api.upstream import Exchange, Upstream

STREAM_BROKEN = "StreamBroken"
TIME_EXCEEDED = "ModelInvocationTimeExceeded"
# At most about this many bytes of the container's answer per `send`: enough that a burst of small
# tokens costs one write instead of one each, little enough that the data plane holds little.
BATCH_BYTES = 65536
# SageMaker's words for InternalStreamFailure (the sagemaker-runtime API reference).
INTERNAL_FAILURE = ("The stream processing failed because of an unknown error, exception or failure. "
                    "Try your request again.")

log = logging.getLogger(__name__)


class Relay:
    """A container's 2xx answer, open: `send` relays its body (ASGI) and ends the exchange."""

    def __init__(self, response: Exchange, choice: Choice, tries: Tries, request):
        """`request`: the data plane's note of the request (its `id`; its `invocation` is set
        when the stream ends, for the endpoint's CloudWatch metrics)."""
        self.response, self.choice, self.tries, self.request = response, choice, tries, request

    def headers(self, date: bytes) -> list[tuple[bytes, bytes]]:
        """No Content-Length: uvicorn sends the stream chunked."""
        headers = [
            (b"content-type", eventstream.CONTENT_TYPE.encode()),
            (b"x-amzn-invoked-production-variant", self.choice.variant_name.encode()),
            (b"x-amzn-requestid", self.request.id.encode()),
            (b"date", date),
        ]
        content_type = self.response.headers.get("Content-Type")
        if content_type:
            headers.append((b"x-amzn-sagemaker-content-type", content_type.encode("latin-1")))
        custom = self.response.headers.get("X-Amzn-SageMaker-Custom-Attributes")
        if custom is not None:
            headers.append((b"x-amzn-sagemaker-custom-attributes", custom.encode("latin-1")))
        return headers

    async def send(self, send, receive, date: bytes) -> None:
        gone = asyncio.ensure_future(_disconnected(receive))
        model_status = self.response.status
        try:  # from the head on: whatever happens, the connection and the in-flight count are given back
            await send({"type": "http.response.start", "status": 200, "headers": self.headers(date)})
            while pieces := await self.response.take(BATCH_BYTES):
                if gone.done():  # nobody reads any more: stop reading the container too
                    break
                await send({"type": "http.response.body", "body": eventstream.payload_parts(pieces),
                            "more_body": True})
            ending = b""
        except (NoAnswer, TimedOut) as error:
            model_status = 0
            ending = _model_stream_error(error)
        except asyncio.CancelledError:  # the data plane stops with the stream open
            model_status = 0
            await _send_last(send, _internal_stream_failure())
            raise
        except Exception:
            log.exception("stream relay failed (request id %s)", self.request.id)
            model_status = 0
            ending = _internal_stream_failure()
        finally:
            gone.cancel()
            # Back to the pool when read to its end; closed when it was not (or failed).
            self.response.release()
            self.request.invocation = self.tries.ended(self.choice, model_status)
        await send({"type": "http.response.body", "body": ending})


async def open_relay(
    tries: Tries, upstream: Upstream, body: bytes, headers: dict, request
) -> Relay:
    """Send the request to a container (another one while they refuse it) and wait for the head
    of its answer; a failure or a non-2xx answer raises InvokeEndpoint's error."""
    while True:
        choice = tries.choose()
        try:
            response = await upstream.send(choice.backend.address, choice.backend.port, body, headers)
        except (Refused, NoAnswer, TimedOut) as error:
            request.invocation = tries.ended(choice, 0)
            tries.failed(choice, error)
            continue
        if 200 <= response.status < 300:
            return Relay(response, choice, tries, request)
        try:
            answer = await response.read_whole()
        except (NoAnswer, TimedOut):
            answer = b""
        finally:
            response.release()
            request.invocation = tries.ended(choice, response.status)
        raise contract.model_error(tries.ctx, tries.endpoint_name, response.status, answer)


def _model_stream_error(error: NoAnswer | TimedOut) -> bytes:
    if isinstance(error, TimedOut):
        fields = {"Message": "Your model primary did not complete sending the inference response in the "
                             "allotted time.", "ErrorCode": TIME_EXCEEDED}
    else:
        fields = {"Message": f"The model primary closed the stream before the inference response was "
                             f"complete: {error}", "ErrorCode": STREAM_BROKEN}
    return eventstream.exception("ModelStreamError", fields)


def _internal_stream_failure() -> bytes:
    return eventstream.exception("InternalStreamFailure", {"Message": INTERNAL_FAILURE})


async def _send_last(send, body: bytes) -> None:
    """The stream's last event, sent as the relay is cancelled: the write goes to the socket at
    once unless the client's connection is full, and the data plane does not wait long for that."""
    try:
        await asyncio.wait_for(send({"type": "http.response.body", "body": body}), timeout=1)
    except Exception:  # the connection is full or gone: the client sees the stream cut short
        pass


async def _disconnected(receive) -> None:
    """Returns when the client goes (its body was read: the next ASGI message is the disconnect)."""
    while (await receive())["type"] != "http.disconnect":
        pass
