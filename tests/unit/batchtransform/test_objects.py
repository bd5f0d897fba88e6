"""One object's payloads sent concurrently and answered in any order: the answers are written in
input order (developer guide, "Use Batch Transform": "The predictions in an output file are listed
in the same order as the corresponding records in the input file"), at most MaxConcurrentTransforms
requests are in flight, and the first answer that is not 200 fails the object and stops sending."""

import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from batchtransform.model_client import ModelError
from batchtransform.objects import ChunkReader, Sender, Stopped, _ObjectRun
from transform.assembly import OrderedOutput
from transform.batching import object_payloads
from transform.errors import ObjectFailed
from transform.filters import DataProcessing


class FakeClient:
    """Answers each payload upper-cased, later payloads sooner (so answers arrive out of order);
    counts the requests in flight; a payload holding `reject` is answered 400."""

    def __init__(self, delay_of=lambda body: 0.0):
        self.delay_of = delay_of
        self.in_flight = self.most_in_flight = self.sent = 0
        self.lock = threading.Lock()

    def invoke(self, body: bytes) -> bytes:
        with self.lock:
            self.in_flight += 1
            self.sent += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay_of(body))
            if b"reject" in body:
                raise ModelError(400, "cannot transform")
            return body.upper().rstrip(b"\n")
        finally:
            with self.lock:
                self.in_flight -= 1


class SpillingClient(FakeClient):
    """Answers as a file, as ModelClient does an answer over its memory bound."""

    def invoke(self, body: bytes):
        return io.BytesIO(super().invoke(body))


def _run(
    data: bytes,
    client: FakeClient,
    concurrency: int,
    halt: threading.Event | None = None,
    data_processing: dict | None = None,
) -> bytes:
    written = io.BytesIO()
    with ThreadPoolExecutor(concurrency) as pool:
        sender = Sender(client, pool, threading.Semaphore(concurrency), halt or threading.Event())
        ordered = OrderedOutput(written.write, "Line", concurrency)
        run = _ObjectRun(ordered, DataProcessing.from_request(data_processing, "text/csv", None), sender)
        run.send_all(object_payloads(io.BytesIO(data), "Line", "SingleRecord", 6))
    return written.getvalue()


def test_answers_are_written_in_input_order_with_the_concurrency_bounded():
    lines = [f"record-{index}\n".encode() for index in range(40)]
    client = FakeClient(delay_of=lambda body: 0.02 if body.endswith(b"0\n") else 0.0)

    written = _run(b"".join(lines), client, concurrency=4)

    assert written == b"".join(line.upper() for line in lines)
    assert client.most_in_flight <= 4


def test_a_rejected_payload_fails_the_object_and_stops_the_sending():
    lines = [b"ok\n", b"reject\n"] + [b"more\n"] * 50

    with pytest.raises(ModelError) as failed:
        _run(b"".join(lines), FakeClient(delay_of=lambda body: 0.01), concurrency=2)

    assert failed.value.status == 400


def test_a_halted_job_stops_sending():
    halt = threading.Event()
    halt.set()
    client = FakeClient()

    with pytest.raises(Stopped):
        _run(b"a\nb\n", client, concurrency=1, halt=halt)

    assert client.sent == 0


def test_chunk_reader_reads_across_chunks():
    reader = ChunkReader(iter([b"ab", b"", b"cde", b"f"]))
    assert [reader.read(3), reader.read(2), reader.read(), reader.read(1)] == [b"abc", b"de", b"f", b""]


def test_a_job_halted_while_a_request_hangs_does_not_wait_for_its_answer():
    halt = threading.Event()
    client = FakeClient(delay_of=lambda body: 5.0)
    timer = threading.Timer(0.2, halt.set)
    timer.start()
    started = time.monotonic()

    with pytest.raises(Stopped):
        _run_without_waiting(b"slow\n", client, halt)

    assert time.monotonic() - started < 2


def _run_without_waiting(data: bytes, client: FakeClient, halt: threading.Event) -> None:
    pool = ThreadPoolExecutor(1)
    try:
        sender = Sender(client, pool, threading.Semaphore(1), halt)
        run = _ObjectRun(
            OrderedOutput(io.BytesIO().write, None, 1), DataProcessing.from_request(None, None, None), sender
        )
        run.send_all(object_payloads(io.BytesIO(data), "Line", "SingleRecord", 6))
    finally:
        pool.shutdown(wait=False)


def test_answers_spilled_to_files_are_written_as_they_are():
    assert _run(b"a\nb\n", SpillingClient(), concurrency=2) == b"A\nB\n"


def test_an_answer_too_large_for_memory_fails_an_object_whose_answers_are_filtered():
    """JoinSource and OutputFilter read every answer; one past the memory bound is not read."""
    with pytest.raises(ObjectFailed, match="too large for OutputFilter or JoinSource"):
        _run(b"a\n", SpillingClient(), concurrency=1, data_processing={"JoinSource": "Input"})
