"""One input object through the model into `<object>.out`, streamed.

The object is read from S3 in chunks, inflated (CompressionType), split and packed into payloads
(transform/records, transform/batching) as the requests go out, at most MaxConcurrentTransforms
of them in flight on the instance (a semaphore the instance's objects share); answers are written
in input order (transform/assembly: a reorder window as wide as the concurrency) into a multipart
upload that runs while the object is read (storage/upload_stream). So memory holds a few payloads
and a few upload parts, whatever the object's size (SplitType None with MaxPayloadInMB 0 is one
chunked request, read as it is sent); an answer larger than a payload waits on disk
(batchtransform/model_client.py), except where DataProcessing must read it, which it cannot do
past that bound: the object fails.

SageMaker uploads no `.out` for an object that fails (API reference, TransformOutput.S3OutputPath:
"If any of the objects in the input fail, the job fails and no output is written for them"): a
failure aborts the object's upload."""

import threading
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from batchtransform.model_client import Answer, ModelClient
from storage.s3 import iter_object
from storage.upload_stream import upload_stream
from transform.assembly import OrderedOutput
from transform.batching import Payload, StreamedPayload, object_payloads
from transform.errors import ObjectFailed
from transform.filters import DataProcessing
from transform.records import decompressed

SLOT_WAIT_SECONDS = 0.5  # how often a sender waiting for a free slot looks whether to stop


class Stopped(Exception):
    """The job was stopped, or another object failed: this object is abandoned."""


@dataclass(frozen=True)
class Plan:
    """How every object of the job is read, sent and written."""

    split_type: str | None
    compression_type: str | None
    batch_strategy: str
    max_payload_in_mb: int
    concurrency: int
    assemble_with: str | None
    data_processing: dict | None
    content_type: str | None
    accept: str | None
    output_bucket: str
    output_prefix: str  # the key prefix of S3OutputPath, "" or ending in "/"

    def output_key(self, relative_path: str) -> str:
        return f"{self.output_prefix}{relative_path}.out"


@dataclass(frozen=True)
class Sender:
    """What an instance's objects share: its container's client, the request threads, the slots
    of MaxConcurrentTransforms and the job's `halt` (stopped, or another object failed)."""

    client: ModelClient
    pool: Executor
    slots: threading.Semaphore
    halt: threading.Event


class ChunkReader:
    """A file-like `read(size)` over an iterator of byte chunks (an S3 body)."""

    def __init__(self, chunks: Iterator[bytes]):
        self._chunks = chunks
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        if size < 0:
            data, self._buffer = self._buffer, b""
        else:
            data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data


def transform(plan: Plan, sender: Sender, bucket: str, key: str, relative_path: str) -> int:
    """Send the object's records and write its `.out`; returns the number of requests. Raises
    ObjectFailed (the data), ModelError (the model's answer), Stopped, or StorageError."""
    processing = DataProcessing.from_request(plan.data_processing, plan.content_type, plan.accept)
    stream = decompressed(ChunkReader(iter_object(bucket, key)), plan.compression_type)
    payloads = object_payloads(
        stream, plan.split_type, plan.batch_strategy, plan.max_payload_in_mb, processing.record_filter
    )
    with upload_stream(plan.output_bucket, plan.output_key(relative_path)) as out:
        run = _ObjectRun(OrderedOutput(out.write, plan.assemble_with, plan.concurrency), processing, sender)
        return run.send_all(payloads)


class _ObjectRun:
    def __init__(self, ordered: OrderedOutput, processing: DataProcessing, sender: Sender):
        self._ordered = ordered
        self._processing = processing
        self._sender = sender
        self._changed = threading.Condition()
        self._pending = 0
        self._error: BaseException | None = None

    def send_all(self, payloads: Iterator[Payload | StreamedPayload]) -> int:
        sent = 0
        try:
            for payload in payloads:
                self._send(payload)
                sent += 1
        finally:
            with self._changed:
                # A halted job does not wait for answers: its containers are about to be removed.
                self._wait_until(lambda: self._pending == 0 or self._sender.halt.is_set())
        if self._error is not None:
            raise self._error
        if self._pending:
            raise Stopped()
        return sent

    def _send(self, payload: Payload | StreamedPayload) -> None:
        with self._changed:
            self._wait_until(self._may_send(payload.sequence))
            self._raise_if_halted()
            self._pending += 1
        while not self._sender.slots.acquire(timeout=SLOT_WAIT_SECONDS):
            if self._sender.halt.is_set():
                with self._changed:
                    self._pending -= 1
                raise Stopped()
        body = payload.chunks if isinstance(payload, StreamedPayload) else payload.body
        future = self._sender.pool.submit(self._sender.client.invoke, body)
        future.add_done_callback(lambda done: self._answered(payload, done))

    def _wait_until(self, ready) -> None:
        """Wait (holding `_changed`) until `ready()`; the job's halt is looked at every
        SLOT_WAIT_SECONDS, since whoever sets it does not notify this condition."""
        while not ready():
            self._changed.wait(SLOT_WAIT_SECONDS)

    def _may_send(self, sequence: int):
        return lambda: self._error is not None or self._sender.halt.is_set() or self._ordered.admits(sequence)

    def _raise_if_halted(self) -> None:
        if self._error is not None:
            raise self._error
        if self._sender.halt.is_set():
            raise Stopped()

    def _answered(self, payload: Payload | StreamedPayload, done: Future) -> None:
        self._sender.slots.release()
        with self._changed:
            try:
                if self._error is None:
                    self._ordered.put(payload.sequence, self._written(payload, done.result()))
            except BaseException as error:  # the model's, the filters' or S3's: the object fails
                self._error = self._error or error
            self._pending -= 1
            self._changed.notify_all()

    def _written(self, payload: Payload | StreamedPayload, answer: Answer) -> Answer:
        """What goes into `.out` for this answer (DataProcessing's output of it)."""
        if self._processing.answers_pass_through:
            return answer
        if not isinstance(answer, bytes):  # over the bound an answer may be held in memory
            answer.close()
            raise ObjectFailed(
                "The model's answer to one request is too large for OutputFilter or JoinSource "
                "(larger than MaxPayloadInMB)"
            )
        return self._processing.output(payload, answer)
