"""In-process boto3 "sts" and "iam" clients on the test database (tests/unit/protocol/conftest.py)."""

import pytest

from tests.unit.protocol.conftest import access_key, make_client  # noqa: F401  (fixtures)


@pytest.fixture
def sts(make_client):  # noqa: F811
    return make_client("sts")[0]


@pytest.fixture
def iam(make_client):  # noqa: F811
    # IAM is global: botocore signs for us-east-1 whatever the client's region.
    return make_client("iam")[0]
