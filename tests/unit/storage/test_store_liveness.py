"""The bundled store is restarted when it hangs. SeaweedFS's master was seen wedged for good in CI
(every volume assignment timing out, so every write to a new bucket failing with 500 for the rest
of the run) while its process ran on. A stopped store (SIGSTOP) stands in for the wedge: it holds
its ports and answers nothing."""
import signal
import time

import boto3
import pytest

from devstack import stack
from devstack.stack import LOOPBACK, Supervisor, free_port, seaweedfs_spec

KEY = ("AKIDSTORELIVENESS000", "store-liveness-secret")
DEADLINE_SECONDS = 60


@pytest.fixture
def quick_liveness(monkeypatch):
    monkeypatch.setattr(stack, "LIVENESS_SECONDS", 0.2)
    monkeypatch.setattr(stack, "LIVENESS_MISSES", 2)
    monkeypatch.setattr(stack, "LIVENESS_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(stack, "RESTART_DELAY_SECONDS", 0.05)


def test_a_store_that_stops_answering_is_restarted_with_its_data(tmp_path, quick_liveness):
    reports = []
    supervisor = Supervisor(tmp_path / "logs", report=reports.append)
    store_port = free_port()
    supervisor.start(seaweedfs_spec(tmp_path, store_port, KEY))
    client = boto3.client("s3", endpoint_url=f"http://{LOOPBACK}:{store_port}", region_name="us-east-1",
                          aws_access_key_id=KEY[0], aws_secret_access_key=KEY[1])
    with supervisor.watching():
        try:
            client.create_bucket(Bucket="kept")
            client.put_object(Bucket="kept", Key="before", Body=b"written before the hang")
            hung_pid = supervisor.pid("seaweedfs")

            supervisor.signal("seaweedfs", signal.SIGSTOP)
            _wait_until(lambda: supervisor.pid("seaweedfs") not in (None, hung_pid), "a new store runs")

            client.put_object(Bucket="kept", Key="after", Body=b"written after the restart")
            assert client.get_object(Bucket="kept", Key="before")["Body"].read() == b"written before the hang"
        finally:
            supervisor.stop_all()

    assert reports[0].startswith("seaweedfs stopped answering (2 checks")
    assert any(line.startswith("seaweedfs restarted") for line in reports)


def _wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.1)
