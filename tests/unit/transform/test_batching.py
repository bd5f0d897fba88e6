"""Packing records into request payloads: BatchStrategy and MaxPayloadInMB.

API reference, CreateTransformJob: MultiRecord sends "as many records in a mini-batch as can fit
within the MaxPayloadInMB limit", SingleRecord "only one record"; MaxPayloadInMB "must be greater
than, or equal to, the size of a single record", defaults to 6 MB, and 0 is for payloads "arbitrarily
large and ... transmitted using HTTP chunked encoding". TransformInput.SplitType: SingleRecord
removes a binary record's padding, MultiRecord keeps it."""
import io
import struct

import pytest

from tests.unit.transform.streams import TrickleStream
from transform.batching import (
    MEBIBYTE,
    Payload,
    StreamedPayload,
    multi_record_payloads,
    object_payloads,
    payload_limit_bytes,
)
from transform.crc32c import masked_crc32c
from transform.errors import ObjectFailed
from transform.records import CHUNK_BYTES, PAYLOAD_TOO_LARGE, Record, split


def bodies(payloads) -> list[bytes]:
    return [payload.body for payload in payloads]


def lines(count: int, width: int) -> bytes:
    return b"".join(b"%0*d\n" % (width - 1, n) for n in range(count))


def test_max_payload_is_counted_in_mebibytes_with_six_by_default():
    assert payload_limit_bytes(None) == 6 * MEBIBYTE
    assert payload_limit_bytes(1) == MEBIBYTE
    assert payload_limit_bytes(0) is None


def test_multi_record_packs_consecutive_lines_up_to_the_limit():
    """Lines keep their newlines, so a MultiRecord payload is a run of the object's lines."""
    records = split(io.BytesIO(b"aaa\nbbb\nccc\nddd\ne"), "Line")
    payloads = list(multi_record_payloads(records, 8, lambda record: record))
    assert bodies(payloads) == [b"aaa\nbbb\n", b"ccc\nddd\n", b"e"]
    assert [payload.sequence for payload in payloads] == [0, 1, 2]
    assert [len(payload.records) for payload in payloads] == [2, 2, 1]


def test_a_payload_exactly_at_the_limit_is_sent():
    """The limit must be "greater than, or equal to" a record: equal fits."""
    payloads = object_payloads(io.BytesIO(lines(4, 256 * 1024)), "Line", "MultiRecord", 1)
    assert bodies(payloads) == [lines(4, 256 * 1024)]


def test_multi_record_is_the_default_batch_strategy():
    """The data log of AWS's scikit_bring_your_own notebook, which sets no strategy, reads
    "BatchStrategy=MULTI_RECORD" (amazon-sagemaker-examples issue 1620)."""
    assert bodies(object_payloads(io.BytesIO(b"1\n2\n3\n"), "Line", None, None)) == [b"1\n2\n3\n"]


def test_single_record_sends_each_line_in_its_own_request():
    payloads = list(object_payloads(io.BytesIO(b"1,2\n3,4\n"), "Line", "SingleRecord", 6))
    assert bodies(payloads) == [b"1,2\n", b"3,4\n"]
    assert [payload.sequence for payload in payloads] == [0, 1]


def test_single_record_recordio_strips_the_framing_and_multi_record_keeps_it():
    framed = [struct.pack("<II", 0xCED7230A, len(d)) + d + bytes(-len(d) % 4) for d in (b"abcde", b"fg")]
    data = b"".join(framed)
    single = object_payloads(io.BytesIO(data), "RecordIO", "SingleRecord", 6)
    multi = object_payloads(io.BytesIO(data), "RecordIO", "MultiRecord", 6)
    assert bodies(single) == [b"abcde", b"fg"]
    assert bodies(multi) == [data]


def test_single_record_tfrecord_strips_the_framing_and_multi_record_keeps_it():
    """TFRecord framing (TensorFlow): uint64 length, masked CRC-32C of the length, the data, masked
    CRC-32C of the data, little-endian; SingleRecord sends the data alone."""
    framed = [
        struct.pack("<Q", len(d)) + struct.pack("<I", masked_crc32c(struct.pack("<Q", len(d))))
        + d + struct.pack("<I", masked_crc32c(d))
        for d in (b"example one", b"two")
    ]
    data = b"".join(framed)
    single = object_payloads(TrickleStream(data), "TFRecord", "SingleRecord", 6)
    multi = object_payloads(io.BytesIO(data), "TFRecord", "MultiRecord", 6)
    assert bodies(single) == [b"example one", b"two"]
    assert bodies(multi) == [data]


def test_a_record_larger_than_the_limit_fails_the_object():
    """Developer guide, "Batch Transform Errors": exceeding MaxPayloadInMB "causes an error" when
    "individual records within the dataset exceed the limit"."""
    data = b"small\n" + b"x" * (MEBIBYTE + 1) + b"\n"
    for strategy in ("SingleRecord", "MultiRecord"):
        with pytest.raises(ObjectFailed, match=PAYLOAD_TOO_LARGE):
            list(object_payloads(io.BytesIO(data), "Line", strategy, 1))


def test_a_multi_record_framed_record_over_the_limit_fails_even_when_its_data_fits():
    """MultiRecord sends the padding, so the framed size is what must fit."""
    record = Record(framed=b"h" * 8 + b"d" * 12, payload=b"d" * 12)
    with pytest.raises(ObjectFailed, match=PAYLOAD_TOO_LARGE):
        list(multi_record_payloads([record], 16, lambda r: r))


def test_split_type_none_sends_the_whole_object_in_one_request():
    data = b"a,b\nc,d\n"
    for strategy in ("SingleRecord", "MultiRecord", None):
        payloads = list(object_payloads(io.BytesIO(data), "None", strategy, 6))
        assert bodies(payloads) == [data]


def test_split_type_none_over_the_limit_fails_the_object():
    with pytest.raises(ObjectFailed, match=PAYLOAD_TOO_LARGE):
        list(object_payloads(io.BytesIO(bytes(MEBIBYTE + 1)), None, None, 1))


def test_max_payload_zero_streams_an_unsplit_object_as_it_is_read():
    """MaxPayloadInMB 0: one request "transmitted using HTTP chunked encoding"; the object is
    read as the request is sent, never held."""
    data = bytes(range(256)) * (CHUNK_BYTES // 64)
    stream = TrickleStream(data, step=CHUNK_BYTES)
    [payload] = object_payloads(stream, "None", "MultiRecord", 0)
    assert isinstance(payload, StreamedPayload) and stream.consumed == 0
    assert next(payload.chunks) == data[:CHUNK_BYTES] and stream.consumed == CHUNK_BYTES
    assert b"".join(payload.chunks) == data[CHUNK_BYTES:]


def test_max_payload_zero_with_splitting_sets_no_size_limit():
    data = lines(3, 2 * MEBIBYTE)
    single = list(object_payloads(io.BytesIO(data), "Line", "SingleRecord", 0))
    assert [len(p.body) for p in single] == [2 * MEBIBYTE] * 3
    [whole] = object_payloads(io.BytesIO(data), "Line", "MultiRecord", 0)
    assert whole.body == data


def test_payloads_are_sized_as_sent_after_the_input_filter():
    """InputFilter shrinks what the model receives; the limit applies to that."""
    data = b"1,aaaaaaaaaaaaaaaaaaaaaaaa\n2,bbbbbbbbbbbbbbbbbbbbbbbb\n"

    def first_column(record: Record) -> Record:
        sent = record.framed.split(b",")[0] + b"\n"
        return Record(sent, sent)

    [payload] = object_payloads(io.BytesIO(data), "Line", "MultiRecord", None, first_column)
    assert payload.body == b"1\n2\n"
    assert [record.framed for record in payload.records] == data.splitlines(keepends=True)


def test_multi_record_holds_no_more_than_one_payload_of_the_object():
    """Issue 26's goal: an object 10x the payload limit streams through."""
    data = lines(10 * 64, 16 * 1024)
    stream = TrickleStream(data, step=CHUNK_BYTES)
    payloads = object_payloads(stream, "Line", "MultiRecord", 1)
    first = next(payloads)
    assert isinstance(first, Payload) and len(first.body) == MEBIBYTE
    assert stream.consumed <= MEBIBYTE + 2 * CHUNK_BYTES
    assert sum(len(payload.body) for payload in payloads) == len(data) - MEBIBYTE
