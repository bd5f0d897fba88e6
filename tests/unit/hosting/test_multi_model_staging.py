"""Staging one target model of a multi-model endpoint (hosting/multi_model.py): the model's
account's rights, tar-slip refused, unpacked once."""

import json

import pytest

from accounts import s3_tenancy
from hosting import multi_model
from tests.tar_archives import tar_gz

PREFIX = "s3://bucket/models/"


@pytest.fixture
def store(monkeypatch):
    """A fake S3 holding `objects` (key -> bytes) that the account may read; counts downloads."""
    objects: dict[str, bytes] = {}
    downloads: list[str] = []
    monkeypatch.setattr(s3_tenancy, "may_use", lambda account_id, bucket: account_id == "111111111111")
    monkeypatch.setattr(multi_model, "object_size", lambda bucket, key: len(objects.get(key, b"")) or None)

    def download_many(items, budget=None):
        for _, key, path in items:
            downloads.append(key)
            path.write_bytes(objects[key])

    monkeypatch.setattr(multi_model, "download_many", download_many)
    return objects, downloads


def test_a_model_is_unpacked_under_its_model_name_once(store, tmp_path):
    objects, downloads = store
    objects["models/a.tar.gz"] = tar_gz({"model.json": json.dumps({"coefficient": 2}).encode()})

    staged = multi_model.stage("111111111111", PREFIX, "a.tar.gz", tmp_path)
    again = multi_model.stage("111111111111", PREFIX, "a.tar.gz", tmp_path)

    assert staged == again == tmp_path / multi_model.container_model_name("a.tar.gz")
    assert json.loads((staged / "model" / "model.json").read_text()) == {"coefficient": 2}
    assert downloads == ["models/a.tar.gz"]


def test_a_missing_key_and_another_account_s_bucket_look_the_same(store, tmp_path):
    objects, _ = store
    objects["models/a.tar.gz"] = tar_gz({"model.json": b"{}"})

    with pytest.raises(multi_model.TargetModelMissing) as missing:
        multi_model.stage("111111111111", PREFIX, "nope.tar.gz", tmp_path)
    assert missing.value.args == ("bucket", "models/nope.tar.gz")
    with pytest.raises(multi_model.TargetModelMissing):
        multi_model.stage("222222222222", PREFIX, "a.tar.gz", tmp_path)


def test_an_archive_escaping_its_directory_is_refused(store, tmp_path):
    objects, _ = store
    objects["models/evil.tar.gz"] = tar_gz({"../../escaped": b"x"})

    with pytest.raises(multi_model.TargetModelUnusable, match="escaped"):
        multi_model.stage("111111111111", PREFIX, "evil.tar.gz", tmp_path)
    assert not list(tmp_path.rglob("escaped"))
