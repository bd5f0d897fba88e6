import os

import pytest

from storage.s3 import (
    ByteBudget,
    SizeLimitExceeded,
    StorageError,
    delete_keys,
    download_many,
    get_bytes,
    iter_object,
    list_keys,
    parse_s3_uri,
    put_bytes,
    upload_tree,
)


@pytest.mark.parametrize(
    "uri, expected",
    [
        ("s3://bucket/path/to/key.csv", ("bucket", "path/to/key.csv")),
        ("s3://bucket/prefix/", ("bucket", "prefix/")),
        ("s3://bucket", ("bucket", "")),
        ("https://s3.example.test/bucket/path/key", ("bucket", "path/key")),
    ],
)
def test_s3_uris_give_bucket_and_key(uri, expected):
    assert parse_s3_uri(uri) == expected


@pytest.mark.parametrize("uri", ["bucket/key", "s3:///key", "ftp://host/bucket/key", ""])
def test_malformed_s3_uris_are_rejected_clearly(uri):
    with pytest.raises(StorageError, match="Invalid S3 URI .*expected s3://bucket/key"):
        parse_s3_uri(uri)


def test_list_keys_matches_the_prefix_string_and_sorts(bucket):
    for key in ["data/train/b.csv", "data/train/a.csv", "data/trial.csv", "other/x"]:
        put_bytes(bucket, key, b"x")
    assert list_keys(bucket, "data/tr") == ["data/train/a.csv", "data/train/b.csv", "data/trial.csv"]
    assert list_keys(bucket, "nothing/") == []


def test_download_many_writes_each_object_creating_parents(bucket, tmp_path):
    put_bytes(bucket, "a.txt", b"alpha")
    put_bytes(bucket, "deep/b.bin", bytes(range(256)) * 4096)
    download_many([(bucket, "a.txt", tmp_path / "a.txt"), (bucket, "deep/b.bin", tmp_path / "x" / "y" / "b")])
    assert (tmp_path / "a.txt").read_bytes() == b"alpha"
    assert (tmp_path / "x" / "y" / "b").read_bytes() == bytes(range(256)) * 4096


def test_upload_tree_keys_are_paths_relative_to_the_root(bucket, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "top.txt").write_text("top")
    (tmp_path / "sub" / "inner.txt").write_text("inner")
    assert upload_tree(tmp_path, bucket, "job/output") == 2
    assert list_keys(bucket, "") == ["job/output/sub/inner.txt", "job/output/top.txt"]
    assert get_bytes(bucket, "job/output/sub/inner.txt") == b"inner"


def test_missing_bucket_and_key_errors_name_the_location_and_the_code(bucket, tmp_path):
    with pytest.raises(StorageError, match=r"^Could not read s3://sageport-no-such-bucket/k: NoSuchBucket$"):
        get_bytes("sageport-no-such-bucket", "k")
    with pytest.raises(StorageError, match=rf"^Could not read s3://{bucket}/absent: NoSuchKey$") as raised:
        download_many([(bucket, "absent", tmp_path / "absent")])
    assert not raised.value.transient


def test_iter_object_streams_from_an_offset_and_delete_keys_ignores_missing_keys(bucket):
    put_bytes(bucket, "stream/a", b"0123456789")
    assert b"".join(iter_object(bucket, "stream/a")) == b"0123456789"
    assert b"".join(iter_object(bucket, "stream/a", start=4)) == b"456789"

    delete_keys(bucket, ["stream/a", "stream/never-existed"])

    assert list_keys(bucket, "stream/") == []


def test_upload_tree_uploads_regular_files_only_never_through_links(bucket, tmp_path):
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "secret").write_text("host secret")
    root = tmp_path / "model"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "weights").write_text("weights")
    os.symlink(tmp_path / "host" / "secret", root / "file-link")
    os.symlink(tmp_path / "host", root / "dir-link")
    os.mkfifo(root / "fifo")
    assert upload_tree(root, bucket, "job/model") == 1
    assert list_keys(bucket, "") == ["job/model/sub/weights"]


def test_a_byte_budget_stops_downloads_that_together_exceed_it(bucket, tmp_path):
    put_bytes(bucket, "a", b"x" * 600)
    put_bytes(bucket, "b", b"y" * 600)
    items = [(bucket, "a", tmp_path / "a"), (bucket, "b", tmp_path / "b")]
    with pytest.raises(SizeLimitExceeded, match="^too much$"):
        download_many(items, ByteBudget(1000, "too much"))
    download_many(items, ByteBudget(1200, "too much"))
    assert (tmp_path / "b").read_bytes() == b"y" * 600
