"""A stream uploaded to S3 as it is written: one PutObject below a part, parts in parallel above,
and nothing left in the bucket when either side fails."""

import hashlib
import os

import pytest
from botocore.exceptions import ClientError

from storage import s3
from storage.s3 import StorageError, get_bytes, list_keys
from storage.upload_stream import upload_stream

PART = 5 * 1024 * 1024  # S3's least part size


def multipart_uploads(s3_client, bucket):
    return s3_client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])


@pytest.fixture
def calls(monkeypatch):
    """The names of the S3 operations the shared client is asked for, in order."""
    client, seen = s3.get_client(), []

    def spy(name):
        real = getattr(client, name)

        def call(*args, **kwargs):
            seen.append(name)
            return real(*args, **kwargs)
        return call

    for name in ("put_object", "create_multipart_upload", "upload_part", "complete_multipart_upload",
                 "abort_multipart_upload"):
        monkeypatch.setattr(client, name, spy(name))
    return seen


def test_a_stream_below_one_part_is_one_put_object(bucket, s3_client, calls):
    body = b"small model" * 100
    with upload_stream(bucket, "out/model.tar.gz", part_bytes=PART) as stream:
        stream.write(body)
    assert calls == ["put_object"]
    assert get_bytes(bucket, "out/model.tar.gz") == body
    etag = s3_client.head_object(Bucket=bucket, Key="out/model.tar.gz")["ETag"]
    assert etag.strip('"') == hashlib.md5(body).hexdigest()


def test_an_empty_stream_writes_an_empty_object(bucket):
    with upload_stream(bucket, "empty", part_bytes=PART):
        pass
    assert get_bytes(bucket, "empty") == b""


def test_a_stream_of_several_parts_is_uploaded_in_parts_written_in_small_pieces(bucket, s3_client, calls):
    body = os.urandom(2 * PART + 12345)
    with upload_stream(bucket, "big", part_bytes=PART, parallel=2) as stream:
        for start in range(0, len(body), 100_000):  # as a compressor writes: pieces of any size
            stream.write(body[start:start + 100_000])
    assert calls[0] == "create_multipart_upload" and calls[-1] == "complete_multipart_upload"
    assert calls.count("upload_part") == 3
    assert get_bytes(bucket, "big") == body
    assert multipart_uploads(s3_client, bucket) == []


def test_a_writer_that_fails_midway_leaves_no_object_and_no_parts(bucket, s3_client, calls):
    with pytest.raises(RuntimeError, match="packing failed"):
        with upload_stream(bucket, "half", part_bytes=PART) as stream:
            stream.write(os.urandom(2 * PART))
            raise RuntimeError("packing failed")
    assert "abort_multipart_upload" in calls
    assert list_keys(bucket, "") == []
    assert multipart_uploads(s3_client, bucket) == []


def test_a_part_refused_by_s3_fails_the_upload_as_a_storage_error_and_aborts_it(
    bucket, s3_client, monkeypatch
):
    client = s3.get_client()
    real_upload_part = client.upload_part

    def upload_part(**kwargs):
        if kwargs["PartNumber"] == 2:
            raise ClientError({"Error": {"Code": "SlowDown", "Message": "slow down"}}, "UploadPart")
        return real_upload_part(**kwargs)

    monkeypatch.setattr(client, "upload_part", upload_part)
    with pytest.raises(StorageError, match=f"^Could not write s3://{bucket}/refused: SlowDown$") as raised:
        with upload_stream(bucket, "refused", part_bytes=PART, parallel=1) as stream:
            for _ in range(4):
                stream.write(os.urandom(PART))
    assert raised.value.transient
    assert list_keys(bucket, "") == []
    assert multipart_uploads(s3_client, bucket) == []

