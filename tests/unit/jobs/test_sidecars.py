"""Detached helper processes: started once, restarted when dead, stopped, and failed for good."""
import importlib.util
import os
import time
from pathlib import Path

import pytest

from jobs import sidecars

MODULE = "tests.unit.jobs.sidecar_example"


def wait_until(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


@pytest.fixture
def helpers(tmp_path) -> Path:
    directory = tmp_path / "sidecars"
    yield directory
    sidecars.stop_all(directory)


def pid_of(directory: Path, name: str) -> int:
    return int((directory / f"{name}.pid").read_text())


def test_a_defined_helper_is_started_once_and_stopped(helpers, tmp_path):
    (tmp_path / "keep").touch()
    sidecars.define(helpers, "waiter", MODULE, {"until": str(tmp_path / "keep")})

    sidecars.ensure_all(helpers)
    assert sidecars.running(helpers, "waiter")  # the launcher took the lock for it
    first = pid_of(helpers, "waiter")
    sidecars.ensure_all(helpers)

    assert pid_of(helpers, "waiter") == first and sidecars.running(helpers, "waiter")
    sidecars.stop_all(helpers)
    assert not sidecars.running(helpers, "waiter")


def test_a_helper_that_died_is_started_again(helpers, tmp_path):
    (tmp_path / "keep").touch()
    sidecars.define(helpers, "waiter", MODULE, {"until": str(tmp_path / "keep")})
    sidecars.ensure_all(helpers)
    os.kill(pid_of(helpers, "waiter"), 9)
    wait_until(lambda: not sidecars.running(helpers, "waiter"))

    sidecars.ensure_all(helpers)

    assert sidecars.running(helpers, "waiter")


def test_a_helper_that_failed_for_good_is_reported_and_not_restarted(helpers):
    sidecars.define(helpers, "broken", MODULE, {"fail": "ClientError: no such bucket"})
    sidecars.ensure_all(helpers)
    wait_until(lambda: sidecars.failure(helpers) is not None and not sidecars.running(helpers, "broken"))

    sidecars.ensure_all(helpers)

    assert sidecars.failure(helpers) == "ClientError: no such bucket"
    assert not sidecars.running(helpers, "broken")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("workers.pipe_feeder", "jobs.pipe_feeder"),
        ("training.data.pipe_feeder", "jobs.pipe_feeder"),
        ("workers.checkpoint_sync", "training.data.checkpoint_sync"),
    ],
)
def test_a_spec_written_before_the_reorganisation_restarts_its_helper_from_the_new_module(
    helpers, monkeypatch, old, new
):
    """A job started before issue 8 (or 26) moved the helpers has spec files naming their old
    modules."""
    started = []
    monkeypatch.setattr(sidecars, "_start", lambda directory, name, module: started.append((name, module)))
    sidecars.define(helpers, "feeder", old, {})
    sidecars.ensure_all(helpers)
    assert started == [("feeder", new)]
    assert importlib.util.find_spec(new) is not None


def test_a_current_module_name_is_kept():
    assert sidecars.current_module(MODULE) == MODULE
