"""Request bodies checked while they stream: the payload hash, aws-chunked chunk signatures
(AWS's documented example) and the trailing checksum of botocore's unsigned chunked encoding."""

import hashlib
import io

import pytest
from botocore.httpchecksum import AwsChunkedWrapper, Crc32Checksum

from s3gateway import body, signature
from s3gateway.errors import S3Error

# AWS's "Signature calculation: transfer payload in multiple chunks" example (SigV4 docs).
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SEED = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
CHUNKS = [
    (65536, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"),
    (1024, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"),
    (0, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"),
]


def example_caller(payload_hash=signature.STREAMING_SIGNED) -> signature.Caller:
    scope = "20130524/us-east-1/s3/aws4_request"
    key = signature.signing_key(SECRET, "20130524", "us-east-1")
    return signature.Caller(
        "AKIAIOSFODNN7EXAMPLE",
        "111122223333",
        "us-east-1",
        payload_hash,
        "20130524T000000Z",
        scope,
        key,
        SEED,
    )


def signed_stream(chunks=CHUNKS) -> bytes:
    return b"".join(
        b"%x;chunk-signature=%s\r\n%s\r\n" % (size, sig.encode(), b"a" * size) for size, sig in chunks
    )


def read_all(pieces) -> bytes:
    return b"".join(pieces)


def reader_of(data: bytes) -> body.BoundedReader:
    return body.BoundedReader(io.BytesIO(data), len(data))


def test_a_signed_chunk_stream_is_decoded_and_its_signatures_verified():
    decoded = read_all(body.aws_chunked(reader_of(signed_stream()), example_caller(), 66560, None))

    assert decoded == b"a" * 66560


def test_a_changed_chunk_fails_before_it_is_passed_on():
    stream = signed_stream().replace(b"a" * 10, b"b" * 10, 1)
    pieces = body.aws_chunked(reader_of(stream), example_caller(), 66560, None)

    with pytest.raises(S3Error) as raised:
        next(pieces)
    assert raised.value.code == "SignatureDoesNotMatch"


def test_a_reordered_or_truncated_signed_stream_fails():
    reordered = signed_stream([CHUNKS[1], CHUNKS[0], CHUNKS[2]])
    with pytest.raises(S3Error):
        read_all(body.aws_chunked(reader_of(reordered), example_caller(), 66560, None))
    truncated = signed_stream(CHUNKS[:1] + CHUNKS[2:])
    with pytest.raises(S3Error):
        read_all(body.aws_chunked(reader_of(truncated), example_caller(), 66560, None))


def botocore_unsigned_stream(data: bytes) -> bytes:
    wrapper = AwsChunkedWrapper(
        io.BytesIO(data), checksum_cls=Crc32Checksum, checksum_name="x-amz-checksum-crc32", chunk_size=1000
    )
    return wrapper.read()


def test_botocores_unsigned_chunked_body_is_decoded_and_its_crc32_checked():
    data = bytes(range(256)) * 10
    stream = botocore_unsigned_stream(data)
    caller = example_caller(signature.STREAMING_UNSIGNED_TRAILER)

    assert read_all(body.aws_chunked(reader_of(stream), caller, len(data), "x-amz-checksum-crc32")) == data
    corrupted = stream.replace(bytes(range(10)), bytes(10), 1)
    with pytest.raises(S3Error) as raised:
        read_all(body.aws_chunked(reader_of(corrupted), caller, len(data), "x-amz-checksum-crc32"))
    assert raised.value.code == "BadDigest"


def test_a_plain_body_is_checked_against_its_signed_hash_at_the_end():
    data = b"x" * (body.BLOCK_BYTES + 10)
    good = hashlib.sha256(data).hexdigest()

    assert read_all(body.plain(reader_of(data), good)) == data
    with pytest.raises(S3Error) as raised:
        read_all(body.plain(reader_of(data), hashlib.sha256(b"other").hexdigest()))
    assert raised.value.code == "XAmzContentSHA256Mismatch"


def test_a_short_body_is_incomplete():
    reader = body.BoundedReader(io.BytesIO(b"abc"), 10)

    with pytest.raises(S3Error) as raised:
        read_all(body.plain(reader, None))
    assert raised.value.code == "IncompleteBody"


def test_the_last_piece_is_held_back_until_the_check_has_passed():
    released = []

    def pieces():
        yield b"first"
        yield b"last"
        raise S3Error(400, "BadDigest", "checked at the end")

    with pytest.raises(S3Error):
        for piece in body.held_back(pieces()):
            released.append(piece)
    assert released == [b"first"]
