"""`manage.py runnode` never starts a node against a database, broker or S3 of its own."""
import os
import subprocess
import sys

from devstack.stack import PROJECT_DIR


def test_runnode_refuses_to_start_without_the_installations_services(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "SAGEPORT_API_URL")}
    completed = subprocess.run(
        [sys.executable, "manage.py", "runnode"], cwd=PROJECT_DIR, capture_output=True, text=True,
        env={**env, "SAGEPORT_DATA_DIR": str(tmp_path)}, timeout=60,
    )

    assert completed.returncode != 0
    assert "runnode needs the installation's DATABASE_URL" in completed.stderr
    assert "SAGEPORT_API_URL" in completed.stderr and "docs/operations.md" in completed.stderr
    assert not (tmp_path / "logs").exists()  # no worker was started
