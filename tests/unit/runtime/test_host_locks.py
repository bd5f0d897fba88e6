"""Host-wide locks (runtime/host_locks.py): exclusive while held, a bounded wait that gives up,
a bounded number of files, and no lock file meaning no lock rather than a failure."""
import fcntl
import os
import tempfile
import time

import pytest

from runtime import host_locks


@pytest.fixture
def lock_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / host_locks.DIRECTORY_NAME


def other_process_can_lock(directory) -> bool:
    """Whether another holder could take the lock file now (a descriptor of its own, not waiting)."""
    (path,) = directory.iterdir()
    descriptor = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)


def test_a_key_is_exclusive_while_held_and_free_after(lock_directory):
    with host_locks.held("network-ABCD:1234", "sageport-x-tj-1"):
        assert not other_process_can_lock(lock_directory)
    assert other_process_can_lock(lock_directory)


def test_a_bounded_wait_gives_up_while_another_holds_the_key(lock_directory):
    with host_locks.held("elastic-members", "7-node-a"):
        started = time.monotonic()
        with pytest.raises(host_locks.Busy), host_locks.held("elastic-members", "7-node-a", wait_seconds=0.2):
            pass
        assert time.monotonic() - started >= 0.2
    with host_locks.held("elastic-members", "7-node-a", wait_seconds=0.2):
        assert not other_process_can_lock(lock_directory)


def test_keys_share_a_bounded_number_of_lock_files_per_scope(lock_directory):
    for index in range(3 * host_locks.BUCKETS):
        with host_locks.held("engine-a", f"sageport-x-tj-{index}"):
            pass
    assert len(list(lock_directory.iterdir())) <= host_locks.BUCKETS


def test_without_a_lock_file_the_caller_goes_on_unlocked(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker))  # the lock directory cannot be made
    entered = []
    with host_locks.held("network-engine-a", "sageport-x-tj-1", wait_seconds=0.1):
        entered.append(True)
    assert entered == [True]
    assert "without a lock" in caplog.text
