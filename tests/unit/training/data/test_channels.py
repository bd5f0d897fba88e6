import json

import pytest

from accounts import buckets
from accounts.s3_tenancy import ForeignLocation
from storage.s3 import SizeLimitExceeded, put_bytes
from training.data.channels import ChannelError, stage_channel

ACCOUNT, OTHER_ACCOUNT = "123456789012", "210987654321"


def channel(uri, data_type="S3Prefix", distribution=None, name="train"):
    source = {"S3DataType": data_type, "S3Uri": uri}
    if distribution:
        source["S3DataDistributionType"] = distribution
    return {"ChannelName": name, "DataSource": {"S3DataSource": source}}


def staged(root):
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(autouse=True)
def owned(request, db):
    """The job's account owns the test's bucket (accounts/s3_tenancy)."""
    if "bucket" in request.fixturenames:
        buckets.claim(request.getfixturevalue("bucket"), ACCOUNT)


@pytest.fixture
def dataset(bucket):
    for key in ["data/train/a.csv", "data/train/sub/b.csv", "data/trial.csv", "data/train/", "other/c.csv"]:
        put_bytes(bucket, key, b"" if key.endswith("/") else key.encode())
    return bucket


def test_prefix_stages_keys_relative_to_the_prefix_skipping_directory_markers(dataset, tmp_path):
    assert stage_channel(ACCOUNT, channel(f"s3://{dataset}/data/train/"), tmp_path, 0, 1) == 2
    assert staged(tmp_path) == {"a.csv": "data/train/a.csv", "sub/b.csv": "data/train/sub/b.csv"}


def test_directory_prefix_without_trailing_slash_stages_the_files_directly_under_the_channel(
    dataset, tmp_path
):
    # The SageMaker Python SDK's upload_data returns such URIs; scripts read the files directly.
    assert stage_channel(ACCOUNT, channel(f"s3://{dataset}/data/train"), tmp_path, 0, 1) == 2
    assert staged(tmp_path) == {"a.csv": "data/train/a.csv", "sub/b.csv": "data/train/sub/b.csv"}


def test_prefix_ending_mid_name_keeps_paths_below_its_last_slash(dataset, tmp_path):
    assert stage_channel(ACCOUNT, channel(f"s3://{dataset}/data/tr"), tmp_path, 0, 1) == 3
    assert sorted(staged(tmp_path)) == ["train/a.csv", "train/sub/b.csv", "trial.csv"]


def test_prefix_naming_one_object_stages_it_under_its_basename(dataset, tmp_path):
    assert stage_channel(ACCOUNT, channel(f"s3://{dataset}/data/trial.csv"), tmp_path, 0, 1) == 1
    assert staged(tmp_path) == {"trial.csv": "data/trial.csv"}


def test_manifest_stages_listed_keys_relative_to_its_prefix(dataset, tmp_path):
    manifest = [{"prefix": f"s3://{dataset}/data/"}, "train/a.csv", "trial.csv"]
    put_bytes(dataset, "manifests/train.json", json.dumps(manifest).encode())
    spec = channel(f"s3://{dataset}/manifests/train.json", "ManifestFile")
    assert stage_channel(ACCOUNT, spec, tmp_path, 0, 1) == 2
    assert staged(tmp_path) == {"train/a.csv": "data/train/a.csv", "trial.csv": "data/trial.csv"}


def test_sharded_by_s3_key_splits_the_objects_disjointly_across_hosts(bucket, tmp_path):
    for index in range(5):
        put_bytes(bucket, f"shards/part-{index}", str(index).encode())
    spec = channel(f"s3://{bucket}/shards/", distribution="ShardedByS3Key")
    counts = [stage_channel(ACCOUNT, spec, tmp_path / f"algo-{host + 1}", host, 2) for host in range(2)]
    first, second = staged(tmp_path / "algo-1"), staged(tmp_path / "algo-2")
    assert counts == [3, 2]
    assert sorted(first) == ["part-0", "part-2", "part-4"]
    assert first.keys().isdisjoint(second) and len(first) + len(second) == 5


def test_fully_replicated_gives_every_host_everything(dataset, tmp_path):
    spec = channel(f"s3://{dataset}/data/train/", distribution="FullyReplicated")
    assert [stage_channel(ACCOUNT, spec, tmp_path / str(host), host, 2) for host in range(2)] == [2, 2]


@pytest.mark.parametrize("entry", ["../escape.csv", "/etc/cron.d/x", "a/../../b", ""])
def test_keys_that_would_escape_the_channel_directory_are_refused(dataset, tmp_path, entry):
    manifest = [{"prefix": f"s3://{dataset}/data/"}, "trial.csv", entry]
    put_bytes(dataset, "m.json", json.dumps(manifest).encode())
    expected = (
        rf"Refusing to stage S3 key 'data/{entry}' of channel 'train': "
        r"it would be written outside /opt/ml/input/data/train"
    )
    with pytest.raises(ChannelError, match=expected.replace(".", r"\.")):
        stage_channel(ACCOUNT, channel(f"s3://{dataset}/m.json", "ManifestFile"), tmp_path / "in", 0, 1)
    assert not (tmp_path / "in").exists()


def test_an_empty_prefix_fails_the_channel_like_sagemaker(bucket, tmp_path):
    with pytest.raises(ChannelError, match=f"no S3 objects found under S3 URL 's3://{bucket}/nothing/'"):
        stage_channel(ACCOUNT, channel(f"s3://{bucket}/nothing/"), tmp_path, 0, 1)


def test_a_malformed_manifest_is_reported(bucket, tmp_path):
    put_bytes(bucket, "m.json", b'["no prefix object"]')
    with pytest.raises(ChannelError, match=f"s3://{bucket}/m.json is not a valid manifest file"):
        stage_channel(ACCOUNT, channel(f"s3://{bucket}/m.json", "ManifestFile"), tmp_path, 0, 1)


@pytest.mark.parametrize(
    "spec, message",
    [
        (channel("s3://b/p", "AugmentedManifestFile"), "S3DataType AugmentedManifestFile is not supported"),
        (
            {"ChannelName": "train", "DataSource": {"FileSystemDataSource": {}}},
            "FileSystemDataSource is not supported",
        ),
    ],
)
def test_unsupported_data_sources_are_refused_clearly(spec, message, tmp_path):
    with pytest.raises(ChannelError, match=f"Channel 'train': {message}"):
        stage_channel(ACCOUNT, spec, tmp_path, 0, 1)


def test_a_channel_larger_than_the_limit_fails_with_a_clear_reason(dataset, tmp_path, settings):
    settings.SAGEPORT_MAX_CHANNEL_BYTES = 20  # the two objects hold 16 + 20 bytes
    with pytest.raises(SizeLimitExceeded, match=(
        r"^Data download failed: channel 'train' holds more than 20 bytes, "
        r"the limit of one channel \(SAGEPORT_MAX_CHANNEL_BYTES\)$"
    )):
        stage_channel(ACCOUNT, channel(f"s3://{dataset}/data/train/"), tmp_path, 0, 1)
    settings.SAGEPORT_MAX_CHANNEL_BYTES = 36
    assert stage_channel(ACCOUNT, channel(f"s3://{dataset}/data/train/"), tmp_path, 0, 1) == 2


def test_a_channel_in_another_accounts_bucket_is_refused_before_anything_is_read(dataset, tmp_path):
    buckets.release(dataset)
    buckets.claim(dataset, OTHER_ACCOUNT)
    with pytest.raises(ForeignLocation, match=f"^Could not list s3://{dataset}/data/train/: AccessDenied$"):
        stage_channel(ACCOUNT, channel(f"s3://{dataset}/data/train/"), tmp_path / "in", 0, 1)
    assert not (tmp_path / "in").exists()


def test_a_manifest_listing_another_accounts_bucket_is_refused(dataset, s3_client, tmp_path):
    theirs = f"{dataset}-theirs"
    s3_client.create_bucket(Bucket=theirs)
    buckets.claim(theirs, OTHER_ACCOUNT)
    put_bytes(theirs, "secret.csv", b"theirs")
    put_bytes(dataset, "m.json", json.dumps([{"prefix": f"s3://{theirs}/"}, "secret.csv"]).encode())
    try:
        with pytest.raises(ForeignLocation, match=f"Could not read s3://{theirs}/: AccessDenied"):
            stage_channel(ACCOUNT, channel(f"s3://{dataset}/m.json", "ManifestFile"), tmp_path / "in", 0, 1)
    finally:
        s3_client.delete_object(Bucket=theirs, Key="secret.csv")
        s3_client.delete_bucket(Bucket=theirs)
    assert not (tmp_path / "in").exists()
