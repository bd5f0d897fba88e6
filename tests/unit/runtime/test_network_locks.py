"""The host-wide lock around a network's creation (runtime/network_locks.py)."""
import fcntl
import os
import tempfile

import pytest

from runtime import network_locks


@pytest.fixture
def lock_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / network_locks.DIRECTORY_NAME


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


def test_the_lock_of_a_name_is_exclusive_while_held_and_free_after(lock_directory):
    with network_locks.creating("ABCD:1234", "sageport-x-tj-1"):
        assert not other_process_can_lock(lock_directory)
    assert other_process_can_lock(lock_directory)


def test_engines_and_names_share_a_bounded_number_of_lock_files(lock_directory):
    for index in range(3 * network_locks.BUCKETS):
        with network_locks.creating("engine-a", f"sageport-x-tj-{index}"):
            pass
    assert len(list(lock_directory.iterdir())) <= network_locks.BUCKETS


def test_without_a_lock_file_the_create_goes_on_unlocked(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker))  # the lock directory cannot be made
    entered = []
    with network_locks.creating("engine-a", "sageport-x-tj-1"):
        entered.append(True)
    assert entered == [True]
    assert "without a lock" in caplog.text
