"""The data plane's connections to containers, against a loopback server: connections kept alive
and reused; a kept one that the container closed meanwhile, or as a request was sent on it, costs
that request nothing (it goes again on a new connection), while a request that a new connection
loses is never sent twice; the outcomes told apart (Refused, NoAnswer, TimedOut); answers of
every framing read to their end; nothing sent that would break the request's head."""

import asyncio
import socket
import struct
from types import SimpleNamespace

import pytest

from hosting.runtime_api import upstream
from hosting.runtime_api.exchange import NoAnswer, Refused, TimedOut
from hosting.runtime_api.upstream import Upstream
from tests.unit.hosting.runtime_api.test_stream_batches import container_answer

CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"


class Reset(bytes):
    """What the container writes before its connection is reset (a killed process's kernel)."""


class Container:
    """A loopback server answering each request with `answer(request_number)`; it counts the
    connections it accepted and keeps the requests' heads."""

    def __init__(self, answer, close_after: bool = False):
        self.answer, self.close_after = answer, close_after
        self.connections, self.heads = 0, []

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def _serve(self, reader, writer):
        self.connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                await reader.readexactly(length)
                self.heads.append(head)
                reply = self.answer(len(self.heads))
                if reply is None:
                    return  # no answer: the connection closes
                writer.write(bytes(reply))
                await writer.drain()
                if isinstance(reply, Reset):
                    writer.get_extra_info("socket").setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                if self.close_after:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def exchange(client: Upstream, port: int, body: bytes = b"hi", headers=None) -> tuple[int, bytes]:
    answer = await client.send("127.0.0.1", port, body, headers or {"Accept": "text/plain"})
    try:
        return answer.status, await answer.read_whole()
    finally:
        answer.release()


def answer_of(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def run(scenario):
    return asyncio.run(asyncio.wait_for(scenario(), 20))


def test_streams_to_one_container_reuse_one_kept_alive_connection():
    async def scenario():
        client = Upstream(timeout_seconds=5)
        async with Container(lambda n: CHUNKED) as container:
            answers = [await exchange(client, container.port) for _ in range(3)]
            await client.close()
            return answers, container

    answers, container = run(scenario)
    assert answers == [(200, b"hello")] * 3
    assert container.connections == 1
    head = container.heads[0].decode()
    assert head.startswith("POST /invocations HTTP/1.1\r\nHost: 127.0.0.1:")
    assert "Accept: text/plain\r\n" in head and "Content-Length: 2\r\n" in head


def test_an_invocation_reads_the_whole_answer_with_its_headers():
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\nContent-Length: 5\r\n\r\n1,2,3"

    async def scenario():
        client = Upstream(timeout_seconds=5)
        async with Container(lambda n: reply) as container:
            answer = await client.post("127.0.0.1", container.port, b"x", {"Content-Type": "text/csv"})
            await client.close()
            return answer

    answer = run(scenario)
    assert (answer.status, answer.headers["content-type"], answer.body) == (200, "text/csv", b"1,2,3")


def test_a_kept_connection_the_container_closed_meanwhile_is_replaced_unseen():
    async def scenario():
        client = Upstream(timeout_seconds=5)
        async with Container(lambda n: CHUNKED, close_after=True) as container:
            first = await exchange(client, container.port)
            await asyncio.sleep(0.05)  # the container's close reaches the kept connection
            second = await exchange(client, container.port)
            await client.close()
            return first, second, container.connections

    assert run(scenario) == ((200, b"hello"), (200, b"hello"), 2)


def test_a_reused_connection_that_fails_before_any_answer_sends_the_request_once_more():
    """The container closes the kept connection just as the request goes (it never answered, so
    it never acted on it): sent again on a new connection, as exchange.may_send_again allows."""
    async def scenario():
        client = Upstream(timeout_seconds=5)
        async with Container(lambda n: None if n == 2 else CHUNKED) as container:
            first = await exchange(client, container.port)
            second = await exchange(client, container.port)
            await client.close()
            return first, second, container.connections, len(container.heads)

    assert run(scenario) == ((200, b"hello"), (200, b"hello"), 2, 3)


def test_a_new_connection_that_fails_before_any_answer_is_no_answer():
    async def scenario():
        client = Upstream(timeout_seconds=5)
        async with Container(lambda n: None) as container:
            with pytest.raises(NoAnswer):
                await exchange(client, container.port)
            return len(container.heads)

    assert run(scenario) == 1  # sent once: a new connection's failure is not retried


def test_nothing_listening_is_refused():
    async def scenario():
        async with Container(lambda n: CHUNKED) as container:
            port = container.port
        with pytest.raises(Refused):
            await exchange(Upstream(timeout_seconds=5), port)

    run(scenario)


@pytest.mark.parametrize("reply, close_after", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", False),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello", True),  # ended by the connection's end
    (b"HTTP/1.1 500 Oops\r\nContent-Length: 5\r\n\r\nhello", False),
])
def test_answers_of_every_framing_are_read_to_their_end(reply, close_after):
    async def scenario():
        client = Upstream(timeout_seconds=5)
        async with Container(lambda n: reply, close_after=close_after) as container:
            answer = await exchange(client, container.port)
            await client.close()
            return answer

    status, body = run(scenario)
    assert (status, body) == (int(reply[9:12]), b"hello")


def test_an_answer_that_is_not_http_is_no_answer():
    async def scenario():
        async with Container(lambda n: b"SSH-2.0-OpenSSH\r\n\r\n") as container:
            with pytest.raises(NoAnswer, match="not HTTP"):
                await exchange(Upstream(timeout_seconds=5), container.port)

    run(scenario)


def test_an_answer_cut_short_is_no_answer_after_what_came():
    async def scenario():
        reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
        async with Container(lambda n: reply, close_after=True) as container:
            answer = await Upstream(timeout_seconds=5).send("127.0.0.1", container.port, b"", {})
            first = await answer.take(65536)
            with pytest.raises(NoAnswer):
                await answer.take(65536)
            answer.release()
            return first

    assert run(scenario) == [b"hello"]


def test_an_answer_slower_than_the_invocation_timeout_times_out():
    async def scenario():
        async with Container(lambda n: b"") as container:  # a head that never comes
            with pytest.raises(TimedOut):
                await exchange(Upstream(timeout_seconds=0.2), container.port)

    run(scenario)


def test_a_header_value_with_a_newline_is_never_sent():
    async def scenario():
        async with Container(lambda n: CHUNKED) as container:
            with pytest.raises(ValueError, match="newline"):
                await exchange(Upstream(timeout_seconds=5), container.port,
                               headers={"X-Amzn-SageMaker-Custom-Attributes": "a\r\nX-Injected: 1"})
            return container.heads

    assert run(scenario) == []


def test_model_management_requests_go_on_the_same_connections_with_their_method_and_path():
    async def scenario():
        client = Upstream(timeout_seconds=5)
        async with Container(lambda n: answer_of(b"{}")) as container:
            listed = await client.post("127.0.0.1", container.port, b"", {}, method="GET", path="/models")
            invoked = await client.post("127.0.0.1", container.port, b"1", {}, path="/models/m1/invoke")
            with pytest.raises(ValueError, match="request line"):
                await client.post("127.0.0.1", container.port, b"", {}, method="GET", path="/models?a b")
            await client.close()
            return (listed.status, invoked.status), container

    statuses, container = run(scenario)
    assert statuses == (200, 200)
    assert [head.split(b"\r\n")[0] for head in container.heads] == [
        b"GET /models HTTP/1.1", b"POST /models/m1/invoke HTTP/1.1"
    ]
    assert container.connections == 1


def test_a_kept_connection_unused_for_the_idle_time_is_closed(monkeypatch):
    monkeypatch.setattr(upstream, "IDLE_SECONDS", 0.05)

    async def scenario():
        client = Upstream(timeout_seconds=5)
        async with Container(lambda n: CHUNKED) as container:
            await exchange(client, container.port)
            await asyncio.sleep(0.2)
            await exchange(client, container.port)
            await client.close()
            return container.connections

    assert run(scenario) == 2


def test_an_answer_after_interim_ones_is_the_answer():
    """1xx answers (103 Early Hints here) precede the real one on the same connection."""
    early = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n"

    async def scenario():
        client = Upstream(timeout_seconds=5)
        replies = {1: early + answer_of(b"first"), 2: answer_of(b"second")}
        async with Container(replies.get) as container:
            first = await client.post("127.0.0.1", container.port, b"", {})
            second = await client.post("127.0.0.1", container.port, b"", {})
            await client.close()
            return first, second

    first, second = run(scenario)
    assert (first.status, first.body, "Link" in first.headers) == (200, b"first", False)
    assert (second.status, second.body) == (200, b"second")


def test_a_connection_whose_answer_ran_past_its_length_is_not_reused():
    """A container writing more than its Content-Length: the answer is what the length says,
    and the extra bytes never become the next request's answer."""
    async def scenario():
        client = Upstream(timeout_seconds=5)
        replies = {1: answer_of(b"ok") + answer_of(b"stale"), 2: answer_of(b"fresh")}
        async with Container(lambda n: replies[min(n, 2)]) as container:
            first = await client.post("127.0.0.1", container.port, b"", {})
            await asyncio.sleep(0.05)  # the extra bytes arrive on the kept connection
            second = await client.post("127.0.0.1", container.port, b"", {})
            await client.close()
            return first.body, second.body, container.connections

    assert run(scenario) == (b"ok", b"fresh", 2)


def test_a_stream_left_paused_by_a_reader_that_stopped_early_goes_back_to_the_pool_reading():
    """A reader that took a part of a big answer, then stopped (its client gone), left the
    container's socket paused: the connection it gives back is read again, or the next request
    on it would wait for its answer until the invocation timeout."""
    kept = []

    async def scenario():
        piece = b"y" * (upstream.HIGH_WATER // 4)
        head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (5 * len(piece))
        answer = await container_answer(head, *[piece] * 5)  # whole, the last read over the mark
        assert answer.transport.paused
        await answer.take(1024)  # the first piece: the rest stays over the low-water mark
        answer.pool = SimpleNamespace(keep=kept.append)
        answer.release()
        return answer

    answer = run(scenario)
    assert kept == [answer] and not answer.transport.paused


def test_a_reset_during_an_answer_ended_by_its_connection_is_no_answer():
    """Reset, not closed: the answer is cut short, never taken for complete."""
    async def scenario():
        reply = Reset(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhal")
        async with Container(lambda n: reply) as container:
            with pytest.raises(NoAnswer):
                await exchange(Upstream(timeout_seconds=5), container.port)

    run(scenario)
