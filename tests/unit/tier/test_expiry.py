"""A namespace goes when its job is over and the grace period has passed."""

import json

from tier.config import ConfigFile
from tier.expiry import ExpirySweeper
from tier.store import Store

A = "123456789012"
JOB = f"arn:aws:sagemaker:us-east-1:{A}:training-job/j"


def test_a_namespace_expires_after_the_grace_once_its_job_has_no_container(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"budget_bytes": 10**6, "grace_seconds": 100, "peers": []}))
    config = ConfigFile(str(path))
    now = [1000.0]
    store = Store(tmp_path / "root", lambda: 10**6, clock=lambda: now[0])
    store.create_namespace(A, "ns", 1, 3, JOB)
    running = {JOB}
    sweeper = ExpirySweeper(store, config.current, lambda arn: arn in running, clock=lambda: now[0])
    now[0] = 1050.0
    running.clear()
    assert sweeper.sweep_once() == []  # within the grace
    now[0] = 1200.0
    running.add(JOB)
    assert sweeper.sweep_once() == []  # the job still runs
    running.clear()
    assert sweeper.sweep_once() == ["ns"]
    assert store.namespace(A, "ns") is None
