"""The relay of InvokeEndpointWithResponseStream coalescing what the container already sent: the
pieces buffered when one arrives each become their own PayloadPart (boto3 reads the same events)
but go to the client in one ASGI `send`, never more than about BATCH_BYTES of them, and the first
piece never waits for others. The container's answer is fed to the data plane's own reader as
its socket would deliver it."""

import asyncio
from types import SimpleNamespace

from botocore.eventstream import EventStreamBuffer

from hosting.runtime_api import streaming
from hosting.runtime_api.upstream import Exchange

TOKEN = b"token "
HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
END = b"0\r\n\r\n"


class _Socket:
    """The transport under the reader: what it was told about reading."""

    def __init__(self):
        self.paused = False
        self.pauses = 0

    def pause_reading(self):
        self.paused, self.pauses = True, self.pauses + 1

    def resume_reading(self):
        self.paused = False

    def write(self, data):
        pass

    def close(self):
        pass


def chunked(*chunks: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)


async def container_answer(*received: bytes) -> Exchange:
    """A reader whose request went out and whose container sent `received` (socket reads)."""
    answer = Exchange(pool=None, key=("model", 8080))
    answer.connection_made(_Socket())
    sent = asyncio.ensure_future(answer.send(b"request", asyncio.get_running_loop().time() + 60))
    await asyncio.sleep(0)
    for data in received:
        answer.data_received(data)
    return await sent


def _relay(answer: Exchange) -> streaming.Relay:
    answer.release = lambda: None
    tries = SimpleNamespace(ended=lambda choice, status: None)
    return streaming.Relay(answer, SimpleNamespace(variant_name="AllTraffic"), tries,
                           SimpleNamespace(id="request-id"))


async def _never_disconnected():
    await asyncio.Event().wait()


async def _relayed(answer: Exchange, on_send=None) -> list[list[bytes]]:
    """The payloads of the PayloadPart events of each body `send`, in order."""
    sent = []

    async def send(message):
        if message["type"] == "http.response.body" and message["body"]:
            frames = EventStreamBuffer()
            frames.add_data(message["body"])
            sent.append([frame.payload for frame in frames])
            if on_send:
                await on_send(message)

    await _relay(answer).send(send, _never_disconnected, b"date")
    return sent


def test_chunks_already_buffered_are_each_a_payload_part_in_one_send():
    tokens = [TOKEN + b"%d" % i for i in range(50)]

    async def scenario():
        return await _relayed(await container_answer(HEAD + chunked(*tokens) + END))

    assert asyncio.run(scenario()) == [tokens]


def test_the_first_chunk_goes_without_waiting_for_more():
    async def scenario():
        answer = await container_answer(HEAD + chunked(b"first"))
        first = asyncio.Event()

        async def on_send(message):
            first.set()

        relay = asyncio.ensure_future(_relayed(answer, on_send))
        await asyncio.wait_for(first.wait(), 10)  # sent while the container has not written more
        answer.data_received(chunked(b"second") + END)
        return await asyncio.wait_for(relay, 10)

    assert asyncio.run(scenario()) == [[b"first"], [b"second"]]


def test_a_chunk_split_across_socket_reads_goes_as_it_arrives():
    async def scenario():
        answer = await container_answer(HEAD + b"a\r\n01234")
        first = await answer.take(streaming.BATCH_BYTES)
        answer.data_received(b"56789\r\n" + END)
        return first, await answer.take(streaming.BATCH_BYTES), await answer.take(streaming.BATCH_BYTES)

    assert asyncio.run(scenario()) == ([b"01234"], [b"56789"], [])


def test_a_slow_reader_takes_a_bounded_batch_at_a_time():
    """A send that waits (a slow client) gets at most about BATCH_BYTES at once; the rest stays
    queued, and past the high-water mark the container's socket is not read, until the client
    took enough of it."""
    chunks = [b"%05d" % i + b"y" * 95 for i in range(4000)]  # 400 KB of 100-byte chunks

    async def scenario():
        answer = await container_answer(HEAD + chunked(*chunks) + END)
        reading = answer.transport
        assert reading.paused  # more than the high-water mark queued

        async def slow(message):
            await asyncio.sleep(0)  # the client's socket full: the send lets the loop run

        return await _relayed(answer, slow), reading

    sent, reading = asyncio.run(scenario())
    assert [piece for batch in sent for piece in batch] == chunks
    assert len(sent) >= 400_000 // streaming.BATCH_BYTES
    assert all(sum(map(len, batch)) <= streaming.BATCH_BYTES for batch in sent)
    assert reading.pauses == 1 and not reading.paused  # read again once the queue went down
