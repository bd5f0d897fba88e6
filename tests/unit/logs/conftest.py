"""In-process boto3 "logs" clients on the test database (see tests/unit/protocol/conftest.py),
and helpers that write streams the way the worker does."""
import pytest

from logs import store
from tests.unit.protocol.conftest import REGION, access_key, make_client  # noqa: F401  (fixtures)

GROUP = "/aws/sagemaker/TrainingJobs"


@pytest.fixture
def logs(make_client):  # noqa: F811
    client, _ = make_client("logs")
    return client


@pytest.fixture
def write(access_key):  # noqa: F811
    """write(stream_name, [(timestamp_ms, message), ...], group=GROUP, account=<the key's>)"""

    def append(stream_name, events, *, group=GROUP, account=None):
        stream = store.get_stream(account or access_key.account_id, REGION, group, stream_name)
        store.append(stream, events, cursor=str(len(events)))
        return stream

    return append
