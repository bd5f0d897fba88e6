"""What the SDKs send on upload, accepted by the bundled S3 and reflected as S3 does: SSE-S3
(`AES256`) and SSE-KMS (`aws:kms`, with or without a key id: the gateway stores it as AES256) on
single and multipart uploads, and the flexible checksums boto3 adds by default."""

import hashlib
import io
import os

import pytest
import urllib3
from boto3.s3.transfer import TransferConfig
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.httpchecksum import AwsChunkedWrapper, Crc32Checksum

from s3gateway import signature

MIB = 1024 * 1024
MULTIPART = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB)


def headers_of(response) -> dict[str, str]:
    return response["ResponseMetadata"]["HTTPHeaders"]


def test_sse_s3_is_accepted_and_reflected_by_put_head_and_get(s3, bucket):
    put = s3.put_object(Bucket=bucket, Key="sse.txt", Body=b"secret", ServerSideEncryption="AES256")

    assert put["ServerSideEncryption"] == "AES256"
    assert s3.head_object(Bucket=bucket, Key="sse.txt")["ServerSideEncryption"] == "AES256"
    got = s3.get_object(Bucket=bucket, Key="sse.txt")
    assert got["ServerSideEncryption"] == "AES256"
    assert got["Body"].read() == b"secret"


def test_a_multipart_upload_with_sse_s3_is_stored_whole_and_reflected(s3, bucket, tmp_path):
    data = os.urandom(12 * MIB)  # three parts
    source = tmp_path / "model.bin"
    source.write_bytes(data)

    s3.upload_file(
        str(source), bucket, "model.bin", Config=MULTIPART, ExtraArgs={"ServerSideEncryption": "AES256"}
    )

    assert s3.head_object(Bucket=bucket, Key="model.bin")["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=bucket, Key="model.bin")["Body"].read() == data


@pytest.mark.parametrize("key_id", [None, "1234abcd-12ab-34cd-56ef-1234567890ab"])
def test_sse_kms_is_accepted_and_reflected_with_its_key(stack, s3, bucket, key_id):
    extra = {"SSEKMSKeyId": key_id} if key_id else {}
    put = s3.put_object(Bucket=bucket, Key="kms.txt", Body=b"secret", ServerSideEncryption="aws:kms", **extra)

    expected_key = f"arn:aws:kms:{stack.region}:{stack.account_id}:key/" + (key_id or "")
    assert put["ServerSideEncryption"] == "aws:kms"
    assert put["SSEKMSKeyId"].startswith(expected_key)
    head = s3.head_object(Bucket=bucket, Key="kms.txt")
    got = s3.get_object(Bucket=bucket, Key="kms.txt")
    for answer in (head, got):
        assert (answer["ServerSideEncryption"], answer["SSEKMSKeyId"]) == ("aws:kms", put["SSEKMSKeyId"])
        assert answer["Metadata"] == {}  # the gateway's marker never shows
    assert got["Body"].read() == b"secret"


def test_a_multipart_upload_with_sse_kms_is_stored_whole_and_reflected(stack, s3, bucket, tmp_path):
    data = os.urandom(11 * MIB)
    source = tmp_path / "model.tar.gz"
    source.write_bytes(data)

    s3.upload_file(
        str(source), bucket, "model.tar.gz", Config=MULTIPART, ExtraArgs={"ServerSideEncryption": "aws:kms"}
    )

    head = s3.head_object(Bucket=bucket, Key="model.tar.gz")
    assert head["ServerSideEncryption"] == "aws:kms"
    assert head["SSEKMSKeyId"].startswith(f"arn:aws:kms:{stack.region}:{stack.account_id}:key/")
    assert s3.get_object(Bucket=bucket, Key="model.tar.gz")["Body"].read() == data


def test_the_kms_marker_cannot_be_forged_by_a_client(s3, bucket):
    s3.put_object(Bucket=bucket, Key="plain.txt", Body=b"x", Metadata={"sageport-sse-kms-key-id": "forged"})

    head = s3.head_object(Bucket=bucket, Key="plain.txt")
    assert "SSEKMSKeyId" not in head
    assert head["Metadata"] == {}


def test_the_checksums_boto3_sends_are_verified_and_returned(s3, bucket):
    default = s3.put_object(Bucket=bucket, Key="crc32.txt", Body=b"x")  # boto3 adds CRC32 itself
    sha = s3.put_object(Bucket=bucket, Key="sha.txt", Body=b"x", ChecksumAlgorithm="SHA256")

    assert default["ChecksumCRC32"] == "jNwWgw=="
    assert sha["ChecksumSHA256"] == "LXEWQrcmsEQBYnyp+6wy9chTD7GQPMTbAiWHF5IaSIE="
    head = s3.head_object(Bucket=bucket, Key="crc32.txt", ChecksumMode="ENABLED")
    assert headers_of(head)["x-amz-checksum-crc32"] == "jNwWgw=="


def test_a_multipart_upload_with_crc32_checksums_completes(s3, bucket, tmp_path):
    data = os.urandom(11 * MIB)
    source = tmp_path / "data.bin"
    source.write_bytes(data)

    s3.upload_file(
        str(source), bucket, "data.bin", Config=MULTIPART, ExtraArgs={"ChecksumAlgorithm": "CRC32"}
    )

    assert s3.get_object(Bucket=bucket, Key="data.bin")["Body"].read() == data


def send_streaming_put(
    stack, bucket: str, key: str, data: bytes, payload: str, tamper=lambda body: body
) -> urllib3.BaseHTTPResponse:
    """A PutObject with an aws-chunked body, as SDKs other than boto3 send it: signed chunks
    (chained chunk signatures) or unsigned chunks with a trailing CRC32."""
    url = f"{stack.s3_endpoint_url}/{bucket}/{key}"
    headers = {"Content-Encoding": "aws-chunked", "X-Amz-Decoded-Content-Length": str(len(data))}
    if payload == signature.STREAMING_UNSIGNED_TRAILER:
        headers["X-Amz-Trailer"] = "x-amz-checksum-crc32"
    request = AWSRequest(method="PUT", url=url, headers=headers)
    signer = S3SigV4Auth(Credentials(stack.access_key_id, stack.secret_access_key), "s3", stack.region)
    signer.payload = lambda request: payload
    signer.add_auth(request)
    if payload == signature.STREAMING_UNSIGNED_TRAILER:
        wrapper = AwsChunkedWrapper(
            io.BytesIO(data),
            checksum_cls=Crc32Checksum,
            checksum_name="x-amz-checksum-crc32",
            chunk_size=64 * 1024,
        )
        body = wrapper.read()
    else:
        body = signed_chunks(request, stack, data)
    body = tamper(body)
    request.headers["Content-Length"] = str(len(body))
    return urllib3.PoolManager(retries=False, timeout=30).request(
        "PUT", url, body=body, headers=dict(request.headers.items())
    )


def signed_chunks(request: AWSRequest, stack, data: bytes, size: int = 64 * 1024) -> bytes:
    authorization = request.headers["Authorization"]
    amz_date = request.headers["X-Amz-Date"]
    scope = f"{amz_date[:8]}/{stack.region}/s3/aws4_request"
    caller = signature.Caller(
        stack.access_key_id,
        "",
        stack.region,
        signature.STREAMING_SIGNED,
        amz_date,
        scope,
        signature.signing_key(stack.secret_access_key, amz_date[:8], stack.region),
        authorization.rsplit("Signature=", 1)[1],
    )
    previous, parts = caller.seed_signature, []
    for chunk in [data[i : i + size] for i in range(0, len(data), size)] + [b""]:
        previous = signature.chunk_signature(caller, previous, hashlib.sha256(chunk).hexdigest())
        parts.append(b"%x;chunk-signature=%s\r\n%s\r\n" % (len(chunk), previous.encode(), chunk))
    return b"".join(parts)


@pytest.mark.parametrize("payload", [signature.STREAMING_SIGNED, signature.STREAMING_UNSIGNED_TRAILER])
def test_aws_chunked_uploads_are_decoded_and_stored_as_sent(stack, s3, bucket, payload):
    data = os.urandom(200 * 1024 + 7)

    answer = send_streaming_put(stack, bucket, "chunked.bin", data, payload)

    assert answer.status == 200, answer.data
    assert s3.get_object(Bucket=bucket, Key="chunked.bin")["Body"].read() == data


def test_a_chunked_upload_with_a_forged_chunk_is_refused_and_not_stored(stack, s3, bucket):
    data = os.urandom(100 * 1024)

    answer = send_streaming_put(
        stack,
        bucket,
        "forged.bin",
        data,
        signature.STREAMING_SIGNED,
        tamper=lambda body: body.replace(data[:16], bytes(16), 1),
    )

    assert answer.status == 403
    assert b"<Code>SignatureDoesNotMatch</Code>" in answer.data
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
