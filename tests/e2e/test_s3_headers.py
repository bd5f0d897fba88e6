"""What the SDKs send on upload, accepted by the bundled S3 and reflected as S3 does: SSE-S3
(`AES256`) and SSE-KMS (`aws:kms`, with or without a key id: the gateway stores it as AES256) on
single and multipart uploads, and the flexible checksums boto3 adds by default."""

import os

import pytest
from boto3.s3.transfer import TransferConfig

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
