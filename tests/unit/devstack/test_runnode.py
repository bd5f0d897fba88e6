"""`manage.py runnode` never starts a node against a database, broker or S3 of its own."""
import os
import subprocess
import sys

from devstack.management.commands.runnode import data_plane_url
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


def test_a_nodes_containers_find_the_data_plane_on_the_apis_host(settings):
    # docs/operations.md's "Adding a node": the API host's stack serves the data plane there.
    settings.SAGEPORT_RUNTIME_PORT = 8081
    assert data_plane_url({"SAGEPORT_API_URL": "http://10.0.0.5:8080"}) == "http://10.0.0.5:8081"
    assert data_plane_url({"SAGEPORT_API_URL": "http://[fd00::5]:8080"}) == "http://[fd00::5]:8081"
    given = {"SAGEPORT_API_URL": "https://api.example.com", "SAGEPORT_RUNTIME_URL": "https://rt.example.com"}
    assert data_plane_url(given) == "https://rt.example.com"


def test_runnode_refuses_an_api_behind_a_proxy_without_the_data_planes_url(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "SAGEPORT_RUNTIME_URL"}
    shared = {"DATABASE_URL": "postgres://x@127.0.0.1:1/x", "SAGEPORT_S3_SECRET_ACCESS_KEY": "s",
              "SAGEPORT_API_URL": "https://api.example.com", "SAGEPORT_DATA_DIR": str(tmp_path)}
    completed = subprocess.run(
        [sys.executable, "manage.py", "runnode"], cwd=PROJECT_DIR, capture_output=True, text=True,
        env={**env, **shared}, timeout=60,
    )

    assert completed.returncode != 0
    assert "set SAGEPORT_RUNTIME_URL" in completed.stderr
    assert not (tmp_path / "logs").exists()  # no worker was started
