"""Packing records into request payloads (BatchStrategy, MaxPayloadInMB).

API reference, CreateTransformJob and TransformInput.SplitType: with MultiRecord "SageMaker sends
the maximum number of records in each request, up to the MaxPayloadInMB limit", with SingleRecord
"individual records in each request"; "the value in MaxPayloadInMB must be greater than, or equal
to, the size of a single record", the default is 6 MB, and 0 is for payloads "arbitrarily large
and ... transmitted using HTTP chunked encoding". The developer guide ("Use Batch Transform")
adds that SageMaker "processes each input file separately. It doesn't combine mini-batches from
different input files". A MultiRecord payload is its records' framed bytes back to back: lines
keep their newlines, RecordIO and TFRecord records keep their framing."""
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from transform.errors import ObjectFailed
from transform.records import CHUNK_BYTES, PAYLOAD_TOO_LARGE, Record, split

MEBIBYTE = 1 << 20
DEFAULT_MAX_PAYLOAD_IN_MB = 6  # API reference, CreateTransformJob.MaxPayloadInMB
# What SageMaker uses when neither the request nor the container's execution-parameters set one:
# the data log of AWS's scikit_bring_your_own notebook reads "BatchStrategy=MULTI_RECORD" for a
# transform that set none (amazon-sagemaker-examples issue 1620).
DEFAULT_BATCH_STRATEGY = "MultiRecord"


@dataclass(frozen=True)
class Payload:
    sequence: int  # 0, 1, 2 ... within the object: the order its answer is written in
    records: tuple[Record, ...]  # the input records it carries, as read (JoinSource joins these)
    body: bytes


@dataclass(frozen=True)
class StreamedPayload:
    """The whole object in one request, read as it is sent (SplitType None, MaxPayloadInMB 0)."""

    sequence: int
    chunks: Iterator[bytes]


def payload_limit_bytes(max_payload_in_mb: int | None) -> int | None:
    """MaxPayloadInMB in bytes (MB as 2**20, as the SageMaker SDK's local mode counts it); None
    means no limit (0)."""
    megabytes = DEFAULT_MAX_PAYLOAD_IN_MB if max_payload_in_mb is None else max_payload_in_mb
    return megabytes * MEBIBYTE if megabytes else None


def object_payloads(
    stream: BinaryIO,
    split_type: str | None,
    batch_strategy: str | None,
    max_payload_in_mb: int | None,
    prepare: Callable[[Record], Record] | None = None,
) -> Iterator[Payload | StreamedPayload]:
    """Every request one (decompressed) input object makes, in order. `prepare` turns a record
    as read into the record as sent (DataProcessing.InputFilter); payloads are sized as sent,
    and a record as read is held to the limit too, so that none is buffered past it."""
    limit = payload_limit_bytes(max_payload_in_mb)
    if split_type in (None, "None") and limit is None and prepare is None:
        return iter([StreamedPayload(0, _chunks(stream))])
    prepare = prepare or _as_read
    records = split(stream, split_type, limit)
    if (batch_strategy or DEFAULT_BATCH_STRATEGY) == "SingleRecord" or split_type in (None, "None"):
        return single_record_payloads(records, limit, prepare)
    return multi_record_payloads(records, limit, prepare)


def single_record_payloads(
    records: Iterable[Record], limit: int | None, prepare: Callable[[Record], Record]
) -> Iterator[Payload]:
    for sequence, record in enumerate(records):
        body = prepare(record).payload
        _check_fits(len(body), limit)
        yield Payload(sequence, (record,), body)


def multi_record_payloads(
    records: Iterable[Record], limit: int | None, prepare: Callable[[Record], Record]
) -> Iterator[Payload]:
    sequence, batch, parts, size = 0, [], [], 0
    for record in records:
        framed = prepare(record).framed
        _check_fits(len(framed), limit)
        if batch and limit is not None and size + len(framed) > limit:
            yield Payload(sequence, tuple(batch), b"".join(parts))
            sequence, batch, parts, size = sequence + 1, [], [], 0
        batch.append(record)
        parts.append(framed)
        size += len(framed)
    if batch:
        yield Payload(sequence, tuple(batch), b"".join(parts))


def _as_read(record: Record) -> Record:
    return record


def _check_fits(size: int, limit: int | None) -> None:
    if limit is not None and size > limit:
        raise ObjectFailed(PAYLOAD_TOO_LARGE)


def _chunks(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK_BYTES):
        yield chunk
