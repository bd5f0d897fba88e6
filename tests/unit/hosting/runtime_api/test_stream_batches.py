"""The relay of InvokeEndpointWithResponseStream coalescing what the container already sent: the
pieces buffered when one arrives each become their own PayloadPart (boto3 reads the same events)
but go to the client in one ASGI `send`, never more than about BATCH_BYTES of them, and the first
piece never waits for others."""

import asyncio
from types import SimpleNamespace
from unittest import mock

from aiohttp.streams import StreamReader
from botocore.eventstream import EventStreamBuffer

from hosting.runtime_api import streaming

TOKEN = b"token "


def _container_answer(chunks: list[bytes], ended: bool = True) -> StreamReader:
    """An answer's body as aiohttp's reader holds it: `chunks` already received as HTTP chunks."""
    content = StreamReader(mock.Mock(_reading_paused=False), 2**20, loop=asyncio.get_running_loop())
    for chunk in chunks:
        content.begin_http_chunk_receiving()
        content.feed_data(chunk)
        content.end_http_chunk_receiving()
    if ended:
        content.feed_eof()
    return content


def _relay(content: StreamReader) -> streaming.Relay:
    response = SimpleNamespace(status=200, headers={}, content=content, release=lambda: None)
    tries = SimpleNamespace(ended=lambda choice, status: None)
    return streaming.Relay(response, SimpleNamespace(variant_name="AllTraffic"), tries,
                           SimpleNamespace(id="request-id"))


async def _never_disconnected():
    await asyncio.Event().wait()


async def _relayed(content: StreamReader, on_send=None) -> list[list[bytes]]:
    """The payloads of the PayloadPart events of each body `send`, in order."""
    sent = []

    async def send(message):
        if message["type"] == "http.response.body" and message["body"]:
            frames = EventStreamBuffer()
            frames.add_data(message["body"])
            sent.append([frame.payload for frame in frames])
            if on_send:
                await on_send(message)

    await _relay(content).send(send, _never_disconnected, b"date")
    return sent


def test_chunks_already_buffered_are_each_a_payload_part_in_one_send():
    async def scenario():
        return await _relayed(_container_answer([TOKEN + b"%d" % i for i in range(50)]))

    assert asyncio.run(scenario()) == [[TOKEN + b"%d" % i for i in range(50)]]


def test_the_first_chunk_goes_without_waiting_for_more():
    async def scenario():
        content = _container_answer([b"first"], ended=False)
        first = asyncio.Event()

        async def on_send(message):
            first.set()

        relay = asyncio.ensure_future(_relayed(content, on_send))
        await asyncio.wait_for(first.wait(), 10)  # sent while the container has not written more
        content.begin_http_chunk_receiving()
        content.feed_data(b"second")
        content.end_http_chunk_receiving()
        content.feed_eof()
        return await asyncio.wait_for(relay, 10)

    assert asyncio.run(scenario()) == [[b"first"], [b"second"]]


def test_a_slow_reader_takes_a_bounded_batch_at_a_time():
    """A send that waits (a slow client) gets at most about BATCH_BYTES at once; the rest stays in
    aiohttp's reader (whose full buffer stops reading the container) until the send returned."""
    chunks = [b"%05d" % i + b"y" * 95 for i in range(4000)]  # 400 KB of 100-byte chunks

    async def scenario():
        async def slow(message):
            await asyncio.sleep(0)  # the client's socket full: the send lets the loop run

        return await _relayed(_container_answer(chunks), slow)

    sent = asyncio.run(scenario())
    assert [piece for batch in sent for piece in batch] == chunks
    assert len(sent) >= 400_000 // streaming.BATCH_BYTES
    assert all(sum(map(len, batch)) <= streaming.BATCH_BYTES + 100 for batch in sent)
