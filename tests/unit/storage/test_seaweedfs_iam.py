"""The filer seam against the session's SeaweedFS, under a prefix no live identity uses."""
import json
import uuid

import pytest

from storage import seaweedfs_iam

PREFIX = "unittest-"


def identity(file_name: str) -> bytes:
    """A valid identity without credentials: the store reloads every file it finds."""
    return json.dumps({"name": file_name.removesuffix(".json")}).encode()


@pytest.fixture
def filer_url(s3_service) -> str:
    url = seaweedfs_iam.bundled_filer_url()
    assert url, "the session's SeaweedFS publishes its filer's address"
    return url


def test_identity_files_are_written_read_back_and_deleted(filer_url):
    name = f"{PREFIX}{uuid.uuid4().hex[:8]}.json"

    seaweedfs_iam.write_identity(filer_url, name, identity(name))
    assert seaweedfs_iam.read_identities(filer_url, PREFIX)[name] == identity(name)

    seaweedfs_iam.delete_identity(filer_url, name)
    assert name not in seaweedfs_iam.read_identities(filer_url, PREFIX)


def test_only_files_with_the_prefix_are_listed(filer_url):
    mine, foreign = f"{PREFIX}{uuid.uuid4().hex[:8]}.json", f"other-{uuid.uuid4().hex[:8]}.json"
    seaweedfs_iam.write_identity(filer_url, mine, identity(mine))
    seaweedfs_iam.write_identity(filer_url, foreign, identity(foreign))
    try:
        listed = seaweedfs_iam.read_identities(filer_url, PREFIX)
    finally:
        seaweedfs_iam.delete_identity(filer_url, mine)
        seaweedfs_iam.delete_identity(filer_url, foreign)

    assert mine in listed and foreign not in listed


def test_an_unreachable_filer_is_a_filer_error(filer_url):
    with pytest.raises(seaweedfs_iam.FilerError):
        seaweedfs_iam.read_identities("http://127.0.0.1:9", PREFIX)
