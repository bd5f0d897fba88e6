"""Model data staging against real S3: the size limit, before and after unpacking."""
import pytest

from accounts import buckets
from hosting import model_data as hosting_model_data
from hosting.model_data import ModelDataError
from storage.s3 import put_bytes
from tests.unit.storage.test_archives import archive_with, file_member

ACCOUNT, OTHER_ACCOUNT = "123456789012", "210987654321"


@pytest.fixture
def bucket(bucket, db):
    buckets.claim(bucket, ACCOUNT)  # the model's account's bucket (accounts/s3_tenancy)
    return bucket


def test_an_archive_that_unpacks_beyond_the_limit_fails_and_writes_nothing(bucket, tmp_path, settings):
    big = file_member("big.bin")
    big.size = 64 * 1024
    archive = archive_with(tmp_path, big).read_bytes()  # a few hundred bytes compressed
    put_bytes(bucket, "model.tar.gz", archive)
    settings.SAGEPORT_MAX_MODEL_DATA_BYTES = 32 * 1024
    assert len(archive) < settings.SAGEPORT_MAX_MODEL_DATA_BYTES
    with pytest.raises(ModelDataError, match="files hold 65536 bytes, more than the limit of 32768 bytes"):
        hosting_model_data.stage(ACCOUNT, {"ModelDataUrl": f"s3://{bucket}/model.tar.gz"}, tmp_path / "model")
    assert list((tmp_path / "model").iterdir()) == []


def test_uncompressed_model_data_beyond_the_limit_fails_with_the_setting_named(bucket, tmp_path, settings):
    put_bytes(bucket, "model/a.bin", b"a" * 600)
    put_bytes(bucket, "model/b.bin", b"b" * 600)
    settings.SAGEPORT_MAX_MODEL_DATA_BYTES = 1000
    source = {"S3Uri": f"s3://{bucket}/model/", "S3DataType": "S3Prefix", "CompressionType": "None"}
    with pytest.raises(ModelDataError, match=r"more than 1000 bytes \(SAGEPORT_MAX_MODEL_DATA_BYTES\)"):
        hosting_model_data.stage(ACCOUNT, {"ModelDataSource": {"S3DataSource": source}}, tmp_path / "model")
    settings.SAGEPORT_MAX_MODEL_DATA_BYTES = 1200
    hosting_model_data.stage(ACCOUNT, {"ModelDataSource": {"S3DataSource": source}}, tmp_path / "model")
    assert sorted(path.name for path in (tmp_path / "model").iterdir()) == ["a.bin", "b.bin"]


def test_model_data_in_another_accounts_bucket_is_refused_and_nothing_is_read(bucket, tmp_path):
    put_bytes(bucket, "model.tar.gz", archive_with(tmp_path, file_member("weights.bin")).read_bytes())
    container = {"ModelDataUrl": f"s3://{bucket}/model.tar.gz"}
    with pytest.raises(ModelDataError, match=(
        f"^Could not download the model data: Could not read s3://{bucket}/model.tar.gz: AccessDenied$"
    )):
        hosting_model_data.stage(OTHER_ACCOUNT, container, tmp_path / "m")
    assert list((tmp_path / "m").iterdir()) == []
