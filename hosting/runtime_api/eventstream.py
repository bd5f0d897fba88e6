"""AWS's event-stream framing (`application/vnd.amazon.eventstream`), the body of
InvokeEndpointWithResponseStream's answer: one message per event, each a prelude (total length,
headers length, the prelude's CRC32), string headers (`:message-type`, `:event-type` or
`:exception-type`, `:content-type`), the payload, and the whole message's CRC32. botocore's
eventstream parser reads these unchanged (tests/unit/hosting/runtime_api/test_eventstream.py)."""

import functools
import json
import struct
import zlib

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7  # the header value type botocore reads as a UTF-8 string of 2-byte length
_PRELUDE = struct.Struct(">II")
_CRC = struct.Struct(">I")


def payload_part(data: bytes) -> bytes:
    """A `PayloadPart` event whose `Bytes` (the event's payload blob) is `data`."""
    return payload_parts([data])


def payload_parts(pieces: list[bytes]) -> bytes:
    """One `PayloadPart` event per piece, back to back: what a client reads as `len(pieces)`
    events, written at once. The per-token path: a piece costs a lookup of its length's head,
    one CRC over its own bytes and one joined list for the whole batch."""
    framed: list[bytes] = []
    add, pack, crc32 = framed.append, _CRC.pack, zlib.crc32
    for piece in pieces:
        head, head_crc = _payload_part_head(len(piece))
        add(head)
        add(piece)
        add(pack(crc32(piece, head_crc)))
    return b"".join(framed)


def exception(exception_type: str, fields: dict[str, str]) -> bytes:
    """An exception event (`ModelStreamError`, `InternalStreamFailure`): botocore raises it as an
    EventStreamError whose code is `exception_type` while the client iterates the stream."""
    return message(
        {
            ":message-type": "exception",
            ":exception-type": exception_type,
            ":content-type": "application/json",
        },
        json.dumps(fields).encode(),
    )


def message(headers: dict[str, str], payload: bytes) -> bytes:
    return _framed(_headers(headers), payload)


def _framed(encoded: bytes, payload: bytes) -> bytes:
    """A message of already encoded headers: only the lengths and the CRCs depend on the payload."""
    total = _PRELUDE.size + _CRC.size + len(encoded) + len(payload) + _CRC.size
    prelude = _PRELUDE.pack(total, len(encoded))
    head = prelude + _CRC.pack(zlib.crc32(prelude))
    crc = zlib.crc32(payload, zlib.crc32(encoded, zlib.crc32(head)))  # the whole message's, unjoined
    return b"".join((head, encoded, payload, _CRC.pack(crc)))


def _headers(headers: dict[str, str]) -> bytes:
    return b"".join(_header(name, value) for name, value in headers.items())


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return b"".join(
        (struct.pack(">B", len(raw_name)), raw_name, struct.pack(">BH", _STRING, len(raw_value)), raw_value)
    )


# The same for every PayloadPart: encoded once, not per token.
_PAYLOAD_PART_HEADERS = _headers(
    {":message-type": "event", ":event-type": "PayloadPart", ":content-type": "application/octet-stream"}
)


@functools.lru_cache(maxsize=4096)
def _payload_part_head(size: int) -> tuple[bytes, int]:
    """A PayloadPart's bytes before its payload (prelude, prelude CRC, headers) and the message
    CRC's running value over them: they depend only on the payload's length, and a token stream's
    pieces have few distinct lengths, so each is computed once, not per token."""
    total = _PRELUDE.size + _CRC.size + len(_PAYLOAD_PART_HEADERS) + size + _CRC.size
    prelude = _PRELUDE.pack(total, len(_PAYLOAD_PART_HEADERS))
    head = prelude + _CRC.pack(zlib.crc32(prelude)) + _PAYLOAD_PART_HEADERS
    return head, zlib.crc32(head)
