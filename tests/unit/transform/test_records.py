"""Splitting input objects into records: TransformInput.SplitType and CompressionType.

API reference, TransformInput: SplitType None sends "the entire contents of an input object",
Line splits "on a newline character boundary", RecordIO and TFRecord are "record-oriented binary
data formats"; "padding is removed if the value of BatchStrategy is set to SingleRecord. Padding
is not removed if the value of BatchStrategy is set to MultiRecord"; CompressionType Gzip:
"SageMaker automatically decompresses the data"."""
import gzip
import io
import struct

import pytest

from tests.unit.transform.streams import TrickleStream
from transform.crc32c import crc32c, masked_crc32c
from transform.errors import ObjectFailed
from transform.records import CHUNK_BYTES, PAYLOAD_TOO_LARGE, decompressed, split

MAGIC = struct.pack("<I", 0xCED7230A)
# Three records (b"hello", b"", bytes(range(9))) as TensorFlow 2.21's tf.io.TFRecordWriter wrote them.
TENSORFLOW_TFRECORDS = bytes.fromhex(
    "0500000000000000eab2043e68656c6c6fbb1f1c19000000000000000029039807d8ea82a2"
    "090000000000000037f9713900010203040506070861cdd32d"
)


def recordio_part(flag: int, data: bytes) -> bytes:
    """One part as dmlc-core's RecordIOWriter writes it: magic, flag << 29 | length, data, padding."""
    return MAGIC + struct.pack("<I", flag << 29 | len(data)) + data + bytes(-len(data) % 4)


def payloads(data: bytes, split_type: str, limit: int | None = None) -> list[bytes]:
    return [record.payload for record in split(TrickleStream(data), split_type, limit)]


def test_line_records_are_the_lines_with_their_newlines():
    """Line: split on newline boundaries; the last line needs no newline and no empty record
    follows a final newline."""
    assert payloads(b"1,2\n3,4\n5,6", "Line") == [b"1,2\n", b"3,4\n", b"5,6"]
    assert payloads(b"1,2\n3,4\n", "Line") == [b"1,2\n", b"3,4\n"]


def test_line_splitting_leaves_a_carriage_return_in_its_line():
    """SageMaker splits on the newline character only; a CRLF file's lines keep their \\r."""
    assert payloads(b'{"a":1}\r\n{"a":2}\r\n', "Line") == [b'{"a":1}\r\n', b'{"a":2}\r\n']


def test_an_empty_object_has_no_records_whatever_the_split_type():
    for split_type in ("None", "Line", "RecordIO", "TFRecord"):
        assert payloads(b"", split_type) == []


def test_split_type_none_is_the_whole_object_as_one_record():
    data = b"a\nb\nc\n" * 10
    assert payloads(data, "None") == [data]
    assert payloads(data, None) == [data]


def test_split_type_none_fails_an_object_over_the_limit_without_reading_it_all():
    """Developer guide, "Batch Transform Errors": exceeding MaxPayloadInMB "might happen with a
    large dataset if it can't be split, the SplitType parameter is set to none"."""
    stream = TrickleStream(bytes(10 * CHUNK_BYTES), step=CHUNK_BYTES)
    with pytest.raises(ObjectFailed, match=PAYLOAD_TOO_LARGE):
        list(split(stream, "None", CHUNK_BYTES))
    assert stream.consumed <= 2 * CHUNK_BYTES


def test_line_splitting_streams_instead_of_reading_the_object():
    stream = TrickleStream(b"x" * 99 + b"\n" + bytes(20 * CHUNK_BYTES), step=CHUNK_BYTES)
    first = next(split(stream, "Line", 100))
    assert first.payload == b"x" * 99 + b"\n"
    assert stream.consumed == CHUNK_BYTES


def test_a_line_longer_than_the_limit_fails_before_it_is_buffered_whole():
    """API reference, MaxPayloadInMB: "must be greater than, or equal to, the size of a single
    record"."""
    stream = TrickleStream(b"ok\n" + b"x" * (20 * CHUNK_BYTES) + b"\n", step=CHUNK_BYTES)
    records = split(stream, "Line", 1000)
    assert next(records).payload == b"ok\n"
    with pytest.raises(ObjectFailed, match=PAYLOAD_TOO_LARGE):
        next(records)
    assert stream.consumed <= 2 * CHUNK_BYTES


def test_recordio_single_record_payload_is_the_data_without_header_or_padding():
    """RecordIO as MXNet writes it (the SageMaker SDK's `_write_recordio` too): SingleRecord
    removes the framing, MultiRecord keeps it (TransformInput.SplitType)."""
    data = recordio_part(0, b"abcde") + recordio_part(0, b"wxyz") + recordio_part(0, b"")
    records = list(split(TrickleStream(data), "RecordIO"))
    assert [record.payload for record in records] == [b"abcde", b"wxyz", b""]
    assert b"".join(record.framed for record in records) == data
    assert records[0].framed == MAGIC + struct.pack("<I", 5) + b"abcde\0\0\0"


def test_a_multi_part_recordio_record_gets_its_magic_numbers_back():
    """dmlc-core's writer cuts a record where its data holds the magic number at an aligned
    offset (flags 1 first, 2 middle, 3 last) and its reader joins the parts with the magic."""
    original = b"head" + MAGIC + b"mid!" + MAGIC + b"tail5"
    data = recordio_part(1, b"head") + recordio_part(2, b"mid!") + recordio_part(3, b"tail5")
    data += recordio_part(0, b"next")
    records = list(split(TrickleStream(data), "RecordIO"))
    assert [record.payload for record in records] == [original, b"next"]
    assert records[0].framed == data[: len(data) - len(recordio_part(0, b"next"))]


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"\0\0\0\0" + struct.pack("<I", 1) + b"a\0\0\0", "bad magic number"),
        (MAGIC + struct.pack("<I", 8) + b"abc", "ends inside a record"),
        (MAGIC + b"\x01", "ends inside a record header"),
        (recordio_part(2, b"abcd"), "begins with a continuation part"),
        (recordio_part(1, b"abcd") + recordio_part(0, b"next"), "is not continued"),
        (recordio_part(1, b"abcd"), "ends inside a record header"),
    ],
)
def test_a_corrupt_recordio_object_fails_with_the_reason(data, reason):
    with pytest.raises(ObjectFailed, match=reason):
        list(split(io.BytesIO(data), "RecordIO"))


def test_a_recordio_record_over_the_limit_fails_from_its_header():
    stream = TrickleStream(recordio_part(0, bytes(4 * CHUNK_BYTES)), step=CHUNK_BYTES)
    with pytest.raises(ObjectFailed, match=PAYLOAD_TOO_LARGE):
        list(split(stream, "RecordIO", 1000))
    assert stream.consumed == 8


def test_crc32c_matches_the_standard_check_value():
    """RFC 3720 (iSCSI) CRC-32C: the check value of b"123456789" is 0xE3069283."""
    assert crc32c(b"123456789") == 0xE3069283
    assert masked_crc32c(b"") == ((0 >> 15 | 0 << 17) + 0xA282EAD8) & 0xFFFFFFFF


def test_tfrecords_written_by_tensorflow_split_into_their_examples():
    """SplitType TFRecord is in the API's enum; AWS's `tensorflow-serving-tfrecord-python-sdk`
    sample runs it with SingleRecord and parses each payload as a bare tf.train.Example."""
    records = list(split(TrickleStream(TENSORFLOW_TFRECORDS), "TFRecord"))
    assert [record.payload for record in records] == [b"hello", b"", bytes(range(9))]
    assert b"".join(record.framed for record in records) == TENSORFLOW_TFRECORDS


@pytest.mark.parametrize(
    "offset, reason",
    [(8, "length's checksum does not match"), (12, "data's checksum does not match")],
)
def test_a_tfrecord_with_a_bad_checksum_fails_the_object(offset, reason):
    corrupt = bytearray(TENSORFLOW_TFRECORDS)
    corrupt[offset] ^= 0xFF
    with pytest.raises(ObjectFailed, match=reason):
        list(split(io.BytesIO(bytes(corrupt)), "TFRecord"))


def test_a_truncated_tfrecord_fails_the_object():
    with pytest.raises(ObjectFailed, match="ends inside a record"):
        list(split(io.BytesIO(TENSORFLOW_TFRECORDS[:-2]), "TFRecord"))


def test_gzip_input_is_inflated_as_it_is_read():
    lines = b"".join(b"%d,%d\n" % (n, n * n) for n in range(40_000))
    compressed = gzip.compress(lines)
    stream = TrickleStream(compressed, step=4096)
    records = split(decompressed(stream, "Gzip"), "Line")
    assert next(records).payload == b"0,0\n"
    assert stream.consumed < len(compressed) // 4
    assert b"0,0\n" + b"".join(record.payload for record in records) == lines


def test_concatenated_gzip_members_read_as_one_object():
    """`cat a.gz b.gz` is valid gzip (RFC 1952 members); gzip.GzipFile reads them in turn."""
    data = gzip.compress(b"a\n") + gzip.compress(b"b\n")
    assert [r.payload for r in split(decompressed(io.BytesIO(data), "Gzip"), "Line")] == [b"a\n", b"b\n"]


def test_input_that_is_not_gzip_fails_the_object():
    with pytest.raises(ObjectFailed, match="Unable to decompress the object as Gzip"):
        list(split(decompressed(io.BytesIO(b"plain text\n"), "Gzip"), "Line"))


def test_compression_type_none_passes_the_stream_through():
    stream = io.BytesIO(b"x")
    assert decompressed(stream, "None") is stream
    assert decompressed(stream, None) is stream
