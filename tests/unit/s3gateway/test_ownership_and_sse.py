"""The gateway's access decisions and its SSE-KMS translation."""

import pytest

from s3gateway import ownership, sse
from s3gateway.errors import S3Error
from s3gateway.ownership import Operation

A, B = "111122223333", "444455556666"


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/", (), Operation.LIST_BUCKETS),
        ("PUT", "/my-data", (), Operation.CREATE_BUCKET),
        ("DELETE", "/my-data", (), Operation.DELETE_BUCKET),
        ("PUT", "/my-data", (("tagging", ""),), Operation.BUCKET_REQUEST),  # PutBucketTagging
        ("PUT", "/my-data/key", (), Operation.BUCKET_REQUEST),
        ("DELETE", "/my-data/key", (), Operation.BUCKET_REQUEST),
    ],
)
def test_the_operation_is_read_from_method_path_and_query(method, path, query, expected):
    assert ownership.operation_of(method, ownership.target_of(path, {}), query) is expected


def test_the_copy_source_bucket_is_found_in_every_spelling():
    for source in ("/src-bucket/a/b.txt", "src-bucket/a/b.txt", "src%2Dbucket/a%2Fb.txt?versionId=3"):
        target = ownership.target_of("/dest/key", {"x-amz-copy-source": source})
        assert (target.bucket, target.key, target.copy_source_bucket) == ("dest", "key", "src-bucket")


@pytest.mark.parametrize(("path", "copy_source"), [
    ("/mine/../theirs/key", None),
    ("/mine/%2E%2E/theirs/key", None),
    ("/mine%2F..%2Ftheirs/key", None),
    ("/mine/./key", None),
    ("/mine/key", "mine/../theirs/key"),
])
def test_dot_segments_that_the_store_would_clean_into_another_bucket_are_refused(path, copy_source):
    headers = {"x-amz-copy-source": copy_source} if copy_source else {}

    with pytest.raises(S3Error) as raised:
        ownership.target_of(path, headers)
    assert (raised.value.status, raised.value.code) == (400, "InvalidRequest")


def test_only_the_owner_and_the_platform_may_use_a_bucket():
    assert ownership.may_use(A, A)
    assert ownership.may_use("", A)
    assert ownership.may_use("", None)
    assert not ownership.may_use(B, A)
    assert not ownership.may_use(A, None)  # a platform bucket


def test_creating_a_taken_name_answers_as_s3_does():
    assert ownership.refuse_create(A, None, "eu-west-1") is None
    assert ownership.refuse_create(A, A, "us-east-1") is None  # us-east-1's legacy success
    assert ownership.refuse_create(A, A, "eu-west-1").code == "BucketAlreadyOwnedByYou"
    taken = ownership.refuse_create(A, B, "us-east-1")
    assert (taken.status, taken.code) == (409, "BucketAlreadyExists")


def test_an_aws_kms_request_is_stored_as_aes256_with_the_key_in_the_marker():
    headers = {
        "x-amz-server-side-encryption": "aws:kms",
        "x-amz-server-side-encryption-context": "e30=",
        "x-amz-meta-owner": "alice",
    }

    arn = sse.translate_request(headers, "us-east-1", A)

    assert arn == sse.default_key_arn("us-east-1", A)
    assert arn.startswith(f"arn:aws:kms:us-east-1:{A}:key/")
    assert headers == {"x-amz-server-side-encryption": "AES256", sse.MARKER: arn, "x-amz-meta-owner": "alice"}


@pytest.mark.parametrize(
    ("requested", "reported"),
    [
        (
            "1234abcd-12ab-34cd-56ef-1234567890ab",
            f"arn:aws:kms:us-east-1:{A}:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        ),
        ("alias/my-key", f"arn:aws:kms:us-east-1:{A}:alias/my-key"),
        (f"arn:aws:kms:eu-west-1:{B}:key/k", f"arn:aws:kms:eu-west-1:{B}:key/k"),
    ],
)
def test_a_requested_key_is_reported_as_its_arn(requested, reported):
    headers = {"x-amz-server-side-encryption": "aws:kms", sse.KMS_KEY_ID: requested}

    assert sse.translate_request(headers, "us-east-1", A) == reported
    assert sse.KMS_KEY_ID not in headers


def test_a_clients_own_marker_is_dropped_and_other_requests_are_unchanged():
    headers = {sse.MARKER: "forged", "x-amz-server-side-encryption": "AES256"}

    assert sse.translate_request(headers, "us-east-1", A) is None
    assert headers == {"x-amz-server-side-encryption": "AES256"}


def test_responses_reflect_aws_kms_and_never_show_the_marker():
    stored = [("Content-Length", "3"), ("X-Amz-Server-Side-Encryption", "AES256"), (sse.MARKER, "arn:k")]

    assert sse.reflect_response(stored, None) == [
        ("Content-Length", "3"),
        (sse.SSE, "aws:kms"),
        (sse.KMS_KEY_ID, "arn:k"),
    ]
    assert sse.reflect_response([("X-Amz-Server-Side-Encryption", "AES256")], None) == [
        ("X-Amz-Server-Side-Encryption", "AES256")
    ]
    assert (sse.KMS_KEY_ID, "arn:part") in sse.reflect_response([], "arn:part")


def test_multipart_keys_are_bounded():
    keys = sse.MultipartKeys(limit=2)
    for upload in ("u1", "u2", "u3"):
        keys.remember(upload, f"arn:{upload}")

    assert (keys.get("u1"), keys.get("u3")) == (None, "arn:u3")
    keys.forget("u3")
    assert keys.get("u3") is None
