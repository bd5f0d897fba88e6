import json

from accounts import s3_identities
from accounts.accesskeys import create_access_key
from accounts.models import AccessKey


def identities_of(keys, regions=("us-east-1",)) -> dict[str, dict]:
    files = s3_identities.desired_identities(keys, list(regions))
    return {name: json.loads(content) for name, content in files.items()}


def test_each_account_is_one_identity_holding_all_its_usable_keys(db):
    first, second = create_access_key("111122223333"), create_access_key("111122223333")
    other = create_access_key("444455556666")
    revoked = create_access_key("444455556666")
    AccessKey.objects.filter(pk=revoked.pk).update(active=False)

    identities = identities_of(s3_identities.usable_keys())

    assert sorted(identities) == ["sageport-111122223333.json", "sageport-444455556666.json"]
    mine = identities["sageport-111122223333.json"]
    assert mine["name"] == "sageport-111122223333"
    assert mine["account"]["id"] == "111122223333"
    assert sorted(c["access_key"] for c in mine["credentials"]) == sorted(
        [first.access_key_id, second.access_key_id])
    theirs = identities["sageport-444455556666.json"]
    assert [(c["access_key"], c["secret_key"]) for c in theirs["credentials"]] == [
        (other.access_key_id, other.secret_access_key)]


def test_an_account_is_granted_its_namespace_and_its_sdk_default_buckets_only(db):
    create_access_key("111122223333")

    identities = identities_of(AccessKey.objects.all(), regions=("eu-west-1", "us-east-1"))
    identity = identities["sageport-111122223333.json"]

    assert identity["actions"] == [
        "Admin:111122223333-*",
        "Admin:sagemaker-eu-west-1-111122223333",
        "Admin:sagemaker-us-east-1-111122223333",
    ]
    # No grant may end in a wildcard after something other than the account's own prefix: the
    # store matches patterns against "bucket/key", so "*-<account>" would reach others' keys.
    assert all("*" not in grant or grant == "Admin:111122223333-*" for grant in identity["actions"])


def test_the_content_of_an_identity_is_stable_so_an_unchanged_one_is_not_rewritten(db):
    create_access_key("111122223333")

    first = s3_identities.desired_identities(s3_identities.usable_keys(), ["us-east-1"])
    second = s3_identities.desired_identities(s3_identities.usable_keys(), ["us-east-1"])

    assert first == second


def test_the_stacks_region_is_among_the_default_bucket_regions_even_if_botocore_lacks_it(settings):
    settings.SAGEPORT_REGION = "xx-private-1"

    regions = s3_identities.default_bucket_regions()

    assert "xx-private-1" in regions and "us-east-1" in regions


def test_without_a_bundled_store_nothing_is_synced(db, settings, tmp_path):
    settings.DATA_DIR = tmp_path  # no <data>/s3/filer-url: the S3 store is someone else's

    assert s3_identities.sync() is False


class FakeFiler:
    """The identities directory of a filer, in memory; counts the writes."""

    def __init__(self, files: dict[str, bytes]):
        self.files = dict(files)
        self.writes: list[str] = []

    def install(self, monkeypatch) -> None:
        monkeypatch.setattr(s3_identities.seaweedfs_iam, "bundled_filer_url", lambda: "http://filer")
        monkeypatch.setattr(s3_identities.seaweedfs_iam, "read_identities", self.read)
        monkeypatch.setattr(s3_identities.seaweedfs_iam, "write_identity", self.write)
        monkeypatch.setattr(s3_identities.seaweedfs_iam, "delete_identity", self.delete)

    def read(self, url, prefix):
        return {name: content for name, content in self.files.items() if name.startswith(prefix)}

    def write(self, url, name, content):
        self.writes.append(name)
        self.files[name] = content

    def delete(self, url, name):
        del self.files[name]


def test_a_sync_writes_what_changed_and_removes_stale_identities_but_not_the_stores_own(
    db, monkeypatch
):
    kept = create_access_key("111122223333")
    unchanged = s3_identities.desired_identities([kept], s3_identities.default_bucket_regions())
    filer = FakeFiler({**unchanged, "sageport-999999999999.json": b"{}", "admin.json": b"{}"})
    filer.install(monkeypatch)
    added = create_access_key("444455556666")

    assert s3_identities.sync() is True

    assert filer.writes == ["sageport-444455556666.json"]
    assert sorted(filer.files) == ["admin.json", "sageport-111122223333.json", "sageport-444455556666.json"]
    assert added.access_key_id.encode() in filer.files["sageport-444455556666.json"]


def test_a_deactivated_key_leaves_its_accounts_identity_at_the_next_sync(db, monkeypatch):
    key = create_access_key("111122223333")
    filer = FakeFiler({})
    filer.install(monkeypatch)
    s3_identities.sync()

    AccessKey.objects.filter(pk=key.pk).update(active=False)  # no signal: the sweeper's sync
    s3_identities.sync()

    assert filer.files == {}
