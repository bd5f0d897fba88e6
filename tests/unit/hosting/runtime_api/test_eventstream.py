"""The framing of InvokeEndpointWithResponseStream read back by botocore's own event-stream
parser and the sagemaker-runtime model: what boto3's `invoke_endpoint_with_response_stream` sees."""

from types import SimpleNamespace

import pytest
from botocore.eventstream import ChecksumMismatch, EventStream, EventStreamBuffer
from botocore.exceptions import EventStreamError
from botocore.parsers import EventStreamJSONParser

from hosting.runtime_api import eventstream
from protocol.shapes import service_model


def _read(raw: bytes, split: int = 7) -> list[dict]:
    """The events boto3 yields for `raw`, fed to it in pieces of `split` bytes (as a socket might)."""
    operation = service_model("sagemaker-runtime").operation_model("InvokeEndpointWithResponseStream")
    pieces = [raw[i : i + split] for i in range(0, len(raw), split)]
    stream = EventStream(
        SimpleNamespace(stream=lambda: iter(pieces)),
        output_shape=operation.output_shape.members["Body"],
        parser=EventStreamJSONParser(),
        operation_name=operation.name,
    )
    return list(stream)


def test_payload_parts_read_back_in_order_and_byte_for_byte():
    parts = [b"Hello", b" ", "wörld".encode(), b"", bytes(range(256)) * 300]
    raw = b"".join(eventstream.payload_part(part) for part in parts)
    assert _read(raw) == [{"PayloadPart": {"Bytes": part}} for part in parts]


def test_a_batch_of_parts_reads_back_as_one_event_each_whatever_lengths_repeat():
    """Parts of the same length share their framed head (computed once per length): each still
    carries its own payload and a CRC over it, in one batch or in the next."""
    batch = [b"tok1 ", b"tok2 ", b"", b"tok3 ", b"longer token ", b"tok4 ", bytes(range(256)) * 300]
    raw = eventstream.payload_parts(batch) + eventstream.payload_parts([b"tok5 ", b""])
    assert _read(raw) == [{"PayloadPart": {"Bytes": part}} for part in [*batch, b"tok5 ", b""]]


def test_a_model_stream_error_is_raised_as_botocore_raises_sagemakers():
    raw = eventstream.payload_part(b"first") + eventstream.exception(
        "ModelStreamError", {"Message": "The container closed the stream.", "ErrorCode": "StreamBroken"}
    )
    with pytest.raises(EventStreamError) as raised:
        _read(raw)
    assert raised.value.response["Error"] == {"Code": "ModelStreamError",
                                              "Message": "The container closed the stream."}


def test_the_prelude_and_the_message_carry_checksums_botocore_verifies():
    raw = bytearray(eventstream.payload_part(b"token"))
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(raw))
    message = next(buffer)
    assert message.headers == {":message-type": "event", ":event-type": "PayloadPart",
                               ":content-type": "application/octet-stream"}
    raw[-6] ^= 0xFF  # a payload byte changed: the message's CRC no longer matches
    damaged = EventStreamBuffer()
    damaged.add_data(bytes(raw))
    with pytest.raises(ChecksumMismatch):
        next(damaged)
