"""Request bodies, read from the client as they stream and checked against what was signed.

Each reader yields the (decoded) body in pieces and raises S3Error when the body turns out not to
be what was signed: a wrong hash, a bad chunk signature, a wrong trailing checksum, a short body.
`held_back` passes the pieces on one step late, so that the last piece is released only once the
whole body has been checked: a forwarded upload that fails the check is cut short, and the store
never completes it. Memory per request: one read block, or one aws-chunked chunk (bounded)."""

import base64
import hashlib
import hmac
import zlib
from collections.abc import Iterable, Iterator

from s3gateway.errors import S3Error, signature_mismatch
from s3gateway.signature import STREAMING_SIGNED, Caller, chunk_signature

BLOCK_BYTES = 256 * 1024
MAX_CHUNK_BYTES = 16 * 1024 * 1024  # SDKs send 64 KiB to 8 MiB chunks
_MAX_LINE_BYTES = 4096


class BoundedReader:
    """At most `length` bytes of a stream (the request's Content-Length: never read past it)."""

    def __init__(self, stream, length: int):
        self._stream = stream
        self.remaining = length

    def read(self, size: int) -> bytes:
        data = self._stream.read(min(size, self.remaining)) if self.remaining else b""
        self.remaining -= len(data)
        return data

    def readline(self) -> bytes:
        line = self._stream.readline(min(_MAX_LINE_BYTES, self.remaining)) if self.remaining else b""
        self.remaining -= len(line)
        return line


def incomplete_body() -> S3Error:
    return S3Error(
        400,
        "IncompleteBody",
        "You did not provide the number of bytes specified by the Content-Length HTTP header.",
    )


def plain(reader: BoundedReader, payload_hash: str | None) -> Iterator[bytes]:
    """The body as sent; `payload_hash` (hex) is checked at the end unless None (unsigned)."""
    digest = hashlib.sha256() if payload_hash else None
    while reader.remaining:
        data = reader.read(BLOCK_BYTES)
        if not data:
            raise incomplete_body()
        if digest:
            digest.update(data)
        yield data
    if digest and not hmac.compare_digest(digest.hexdigest(), payload_hash):
        raise S3Error(
            400,
            "XAmzContentSHA256Mismatch",
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
        )


def aws_chunked(
    reader: BoundedReader, caller: Caller, decoded_length: int, trailer: str | None
) -> Iterator[bytes]:
    """The payload of an aws-chunked body: chunk signatures verified (STREAMING-AWS4-HMAC-SHA256-
    PAYLOAD) or the trailing checksum checked (STREAMING-UNSIGNED-PAYLOAD-TRAILER)."""
    signed = caller.payload_hash == STREAMING_SIGNED
    previous = caller.seed_signature
    checksum = _TrailerChecksum(trailer)
    total = 0
    while True:
        size, signature = _chunk_header(reader, signed)
        data = _read_exactly(reader, size)
        if signed:
            expected = chunk_signature(caller, previous, hashlib.sha256(data).hexdigest())
            if not hmac.compare_digest(expected, signature):
                raise signature_mismatch()
            previous = expected
        total += size
        if total > decoded_length:
            raise S3Error(
                400, "IncompleteBody", "The chunks hold more bytes than x-amz-decoded-content-length."
            )
        if size == 0:
            break
        checksum.update(data)
        yield data
        _expect_crlf(reader)
    if total != decoded_length:
        raise incomplete_body()
    if trailer is None:
        _expect_crlf(reader)
    else:
        checksum.check(_read_trailers(reader))


def held_back(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The pieces one step late: the last one only after the body's check has passed."""
    previous = None
    for piece in pieces:
        if previous is not None:
            yield previous
        previous = piece
    if previous is not None:
        yield previous


def _chunk_header(reader: BoundedReader, signed: bool) -> tuple[int, str]:
    line = reader.readline()
    if not line.endswith(b"\r\n"):
        raise incomplete_body()
    size_text, _, extension = line[:-2].decode("latin-1").partition(";")
    try:
        size = int(size_text, 16)
    except ValueError:
        raise S3Error(
            400, "InvalidRequest", "Malformed aws-chunked body: a chunk size is not hexadecimal."
        ) from None
    if not 0 <= size <= MAX_CHUNK_BYTES:
        raise S3Error(400, "InvalidRequest", f"aws-chunked chunks are limited to {MAX_CHUNK_BYTES} bytes.")
    name, _, signature = extension.partition("=")
    if signed and name != "chunk-signature":
        raise S3Error(
            403, "SignatureDoesNotMatch", "Every chunk of a signed aws-chunked body needs a chunk-signature."
        )
    return size, signature


def _read_exactly(reader: BoundedReader, size: int) -> bytes:
    parts, missing = [], size
    while missing:
        data = reader.read(missing)
        if not data:
            raise incomplete_body()
        parts.append(data)
        missing -= len(data)
    return b"".join(parts)


def _expect_crlf(reader: BoundedReader) -> None:
    if _read_exactly(reader, 2) != b"\r\n":
        raise S3Error(400, "InvalidRequest", "Malformed aws-chunked body: a chunk does not end with CRLF.")


def _read_trailers(reader: BoundedReader) -> dict[str, str]:
    trailers = {}
    while True:
        line = reader.readline()
        if not line.endswith(b"\r\n"):
            raise incomplete_body()
        if line == b"\r\n":
            return trailers
        name, _, value = line[:-2].decode("latin-1").partition(":")
        trailers[name.strip().lower()] = value.strip()


class _TrailerChecksum:
    """The checksum an unsigned-payload stream carries in its trailer, where Python can compute
    it (CRC32, the SDKs' default, SHA-1, SHA-256); other algorithms pass unchecked."""

    _HASHES = {"x-amz-checksum-sha1": hashlib.sha1, "x-amz-checksum-sha256": hashlib.sha256}

    def __init__(self, trailer: str | None):
        self.name = (trailer or "").strip().lower()
        self._crc = 0
        self._hash = self._HASHES[self.name]() if self.name in self._HASHES else None

    def update(self, data: bytes) -> None:
        if self.name == "x-amz-checksum-crc32":
            self._crc = zlib.crc32(data, self._crc)
        elif self._hash:
            self._hash.update(data)

    def check(self, trailers: dict[str, str]) -> None:
        if self.name == "x-amz-checksum-crc32":
            computed = base64.b64encode(self._crc.to_bytes(4, "big")).decode()
        elif self._hash:
            computed = base64.b64encode(self._hash.digest()).decode()
        else:
            return
        if trailers.get(self.name) != computed:
            raise S3Error(
                400, "BadDigest", f"The {self.name} you specified did not match the calculated checksum."
            )
