"""What the SDKs send on upload, accepted by the bundled S3 and reflected as S3 does: SSE-S3
(`AES256`) on single and multipart uploads, and the flexible checksums boto3 adds by default."""
import os

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

    s3.upload_file(str(source), bucket, "model.bin", Config=MULTIPART,
                   ExtraArgs={"ServerSideEncryption": "AES256"})

    assert s3.head_object(Bucket=bucket, Key="model.bin")["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=bucket, Key="model.bin")["Body"].read() == data


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

    s3.upload_file(str(source), bucket, "data.bin", Config=MULTIPART,
                   ExtraArgs={"ChecksumAlgorithm": "CRC32"})

    assert s3.get_object(Bucket=bucket, Key="data.bin")["Body"].read() == data
