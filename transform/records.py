"""Splitting an input object into records (TransformInput.SplitType, CompressionType).

The object arrives as a file-like byte stream (an S3 body, a file) and is read in chunks: no
split type holds more than one record, plus a chunk, in memory. Each record keeps two forms,
because SageMaker sends them differently (API reference, TransformInput.SplitType): "padding is
removed if the value of BatchStrategy is set to SingleRecord. Padding is not removed if the value
of BatchStrategy is set to MultiRecord". So `framed` is the record's bytes as they stand in the
object (what MultiRecord concatenates) and `payload` is what a SingleRecord request carries: the
record's data without its binary framing (RecordIO header and padding, TFRecord length and
checksums; AWS's sample `tensorflow-serving-tfrecord-python-sdk` parses a SingleRecord TFRecord
payload as a bare tf.train.Example). For Line both are the line as it stands, newline included."""
import gzip
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from transform.crc32c import masked_crc32c
from transform.errors import ObjectFailed

CHUNK_BYTES = 1 << 16
# The wording SageMaker's data log is reported to use for a record over MaxPayloadInMB; AWS's
# documentation says only that exceeding the limit "causes an error" ("Batch Transform Errors").
PAYLOAD_TOO_LARGE = "Too much data for max payload size"

RECORDIO_MAGIC = 0xCED7230A
_RECORDIO_HEADER = struct.Struct("<II")
_RECORDIO_MAGIC_BYTES = struct.pack("<I", RECORDIO_MAGIC)
_RECORDIO_LENGTH_BITS = 29  # dmlc-core recordio: lrecord = cflag << 29 | length
_RECORDIO_WHOLE, _RECORDIO_FIRST, _RECORDIO_MIDDLE, _RECORDIO_LAST = 0, 1, 2, 3

_TFRECORD_HEADER = struct.Struct("<QI")
_TFRECORD_FOOTER = struct.Struct("<I")


@dataclass(frozen=True)
class Record:
    framed: bytes  # as stored in the object: what MultiRecord concatenates
    payload: bytes  # what a SingleRecord request carries


def decompressed(stream: BinaryIO, compression_type: str | None) -> BinaryIO:
    """The object's bytes as the model should see them: CompressionType Gzip is inflated as it
    is read (API reference, TransformInput.CompressionType: "SageMaker automatically decompresses
    the data"); None passes the stream through."""
    if compression_type in (None, "None"):
        return stream
    if compression_type == "Gzip":
        return _GzipReader(stream)
    raise ValueError(f"unknown CompressionType {compression_type!r}")


class _GzipReader:
    """gzip.GzipFile whose corrupt-input errors become the object's failure reason."""

    def __init__(self, stream: BinaryIO):
        self._inflated = gzip.GzipFile(fileobj=stream, mode="rb")

    def read(self, size: int = -1) -> bytes:
        try:
            return self._inflated.read(size)
        except (OSError, EOFError, zlib.error) as err:
            raise ObjectFailed(f"Unable to decompress the object as Gzip: {err}") from err


def split(stream: BinaryIO, split_type: str | None, max_record_bytes: int | None = None) -> Iterator[Record]:
    """The object's records in order. A record whose payload is over `max_record_bytes` fails
    the object as soon as that is known, before it is read whole."""
    return _SPLITTERS[split_type or "None"](stream, max_record_bytes)


def _too_large(size: int, max_record_bytes: int | None) -> bool:
    return max_record_bytes is not None and size > max_record_bytes


def split_none(stream: BinaryIO, max_record_bytes: int | None) -> Iterator[Record]:
    """SplitType None: "request payloads contain the entire contents of an input object" (API
    reference). An empty object has no record."""
    limit = -1 if max_record_bytes is None else max_record_bytes + 1
    whole = _read_up_to(stream, limit)
    if _too_large(len(whole), max_record_bytes):
        raise ObjectFailed(PAYLOAD_TOO_LARGE)
    if whole:
        yield Record(whole, whole)


def split_lines(stream: BinaryIO, max_record_bytes: int | None) -> Iterator[Record]:
    """SplitType Line: "split records on a newline character boundary" (API reference). A record
    is a line with its `\\n` (a `\\r` before it stays part of the line); the last line needs
    none."""
    pending = bytearray()
    while chunk := stream.read(CHUNK_BYTES):
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", start)) >= 0:
            line = bytes(pending[start : end + 1])
            if _too_large(len(line), max_record_bytes):
                raise ObjectFailed(PAYLOAD_TOO_LARGE)
            yield Record(line, line)
            start = end + 1
        del pending[:start]
        if _too_large(len(pending), max_record_bytes):
            raise ObjectFailed(PAYLOAD_TOO_LARGE)
    if pending:
        yield Record(bytes(pending), bytes(pending))


def split_recordio(stream: BinaryIO, max_record_bytes: int | None) -> Iterator[Record]:
    """SplitType RecordIO, MXNet's format (dmlc-core `src/recordio.cc`): each part is a
    little-endian `magic, lrecord` header, `lrecord & (2**29 - 1)` data bytes and zero padding to
    4 bytes; `lrecord >> 29` says whether the part is a whole record (0) or the first (1), a
    middle (2) or the last (3) part of one. The writer splits a record where its data holds the
    magic number at an aligned offset, so the reader puts the magic back between parts."""
    while header := _read_up_to(stream, _RECORDIO_HEADER.size):
        framed, payload = bytearray(), bytearray()
        flag = _read_recordio_part(stream, header, framed, payload, max_record_bytes)
        if flag not in (_RECORDIO_WHOLE, _RECORDIO_FIRST):
            raise ObjectFailed("Invalid RecordIO: a record begins with a continuation part")
        while flag in (_RECORDIO_FIRST, _RECORDIO_MIDDLE):
            payload += _RECORDIO_MAGIC_BYTES
            header = _read_up_to(stream, _RECORDIO_HEADER.size)
            flag = _read_recordio_part(stream, header, framed, payload, max_record_bytes)
            if flag not in (_RECORDIO_MIDDLE, _RECORDIO_LAST):
                raise ObjectFailed("Invalid RecordIO: a multi-part record is not continued")
        yield Record(bytes(framed), bytes(payload))


def _read_recordio_part(
    stream: BinaryIO, header: bytes, framed: bytearray, payload: bytearray, max_record_bytes: int | None
) -> int:
    if len(header) < _RECORDIO_HEADER.size:
        raise ObjectFailed("Invalid RecordIO: the object ends inside a record header")
    magic, lrecord = _RECORDIO_HEADER.unpack(header)
    if magic != RECORDIO_MAGIC:
        raise ObjectFailed(f"Invalid RecordIO: bad magic number {magic:#010x}")
    length = lrecord & ((1 << _RECORDIO_LENGTH_BITS) - 1)
    if _too_large(len(payload) + length, max_record_bytes):
        raise ObjectFailed(PAYLOAD_TOO_LARGE)
    padded = (length + 3) & ~3
    body = _read_exactly(stream, padded, "Invalid RecordIO: the object ends inside a record")
    framed += header + body
    payload += body[:length]
    return lrecord >> _RECORDIO_LENGTH_BITS


def split_tfrecord(stream: BinaryIO, max_record_bytes: int | None) -> Iterator[Record]:
    """SplitType TFRecord: `uint64 length, uint32 masked_crc32c(length), data,
    uint32 masked_crc32c(data)`, little-endian (TensorFlow's TFRecord format); both checksums are
    checked, so a corrupt or non-TFRecord object fails instead of sending garbage."""
    while header := _read_up_to(stream, _TFRECORD_HEADER.size):
        if len(header) < _TFRECORD_HEADER.size:
            raise ObjectFailed("Invalid TFRecord: the object ends inside a record header")
        length, length_crc = _TFRECORD_HEADER.unpack(header)
        if masked_crc32c(header[:8]) != length_crc:
            raise ObjectFailed("Invalid TFRecord: the length's checksum does not match")
        if _too_large(length, max_record_bytes):
            raise ObjectFailed(PAYLOAD_TOO_LARGE)
        truncated = "Invalid TFRecord: the object ends inside a record"
        data = _read_exactly(stream, length, truncated)
        footer = _read_exactly(stream, _TFRECORD_FOOTER.size, truncated)
        if masked_crc32c(data) != _TFRECORD_FOOTER.unpack(footer)[0]:
            raise ObjectFailed("Invalid TFRecord: the data's checksum does not match")
        yield Record(header + data + footer, data)


def _read_up_to(stream: BinaryIO, size: int) -> bytes:
    """Up to `size` bytes (all that is left for -1): fewer only at the end of the object."""
    parts, wanted = [], size
    while wanted != 0 and (chunk := stream.read(CHUNK_BYTES if wanted < 0 else min(wanted, CHUNK_BYTES))):
        parts.append(chunk)
        if wanted > 0:
            wanted -= len(chunk)
    return b"".join(parts)


def _read_exactly(stream: BinaryIO, size: int, truncated: str) -> bytes:
    data = _read_up_to(stream, size)
    if len(data) != size:
        raise ObjectFailed(truncated)
    return data


_SPLITTERS: dict[str, Callable[[BinaryIO, int | None], Iterator[Record]]] = {
    "None": split_none,
    "Line": split_lines,
    "RecordIO": split_recordio,
    "TFRecord": split_tfrecord,
}
