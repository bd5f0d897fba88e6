"""The files of steps that retention evicted are filled again by the next writes (tier/spares.py):
never one a reader still holds, always within the budget, and the bytes read back are the new
shard's, whatever the old file held."""

import os

import pytest

from tests.unit.tier.test_store import JOB, A, Budget, put, read
from tier.store import Store


@pytest.fixture
def budget():
    return Budget(1_000_000)


def spare_files(store_root) -> list:
    return sorted((store_root / "spare").iterdir())


def inode(path) -> int:
    return os.stat(path).st_ino


def test_a_write_after_retention_fills_the_evicted_steps_file_again(tmp_path, budget):
    store = Store(tmp_path / "root", budget)
    store.create_namespace(A, "ns", 1, 1, JOB)
    first = put(store, 1, 0, b"a" * 300)
    evicted_inode = inode(first.path)
    second = put(store, 2, 0, b"b" * 200)  # retention drops step 1: its file is kept as a spare
    assert [inode(path) for path in spare_files(tmp_path / "root")] == [evicted_inode]
    second_inode = inode(second.path)
    third = put(store, 3, 0, b"c" * 100)  # smaller than the spare: its rest is cut off
    assert inode(third.path) == evicted_inode
    assert [inode(path) for path in spare_files(tmp_path / "root")] == [second_inode]
    assert read(store, 3, 0) == b"c" * 100
    assert read(store, 2, 0) is None and read(store, 1, 0) is None


def test_a_file_a_reader_holds_is_never_filled_again(tmp_path, budget):
    store = Store(tmp_path / "root", budget)
    store.create_namespace(A, "ns", 1, 1, JOB)
    put(store, 1, 0, b"first" * 10)
    _, handle = store.open_shard(A, "ns", 0, 1)
    put(store, 2, 0, b"other" * 10)  # step 1 evicted while read: unlinked, not kept
    put(store, 3, 0, b"third" * 10)  # takes step 2's file, not step 1's
    with handle:
        assert handle.read() == b"first" * 10
    assert read(store, 3, 0) == b"third" * 10


def test_a_closed_readers_file_is_kept_again(tmp_path, budget):
    store = Store(tmp_path / "root", budget)
    store.create_namespace(A, "ns", 1, 1, JOB)
    put(store, 1, 0, b"x" * 50)
    assert read(store, 1, 0) == b"x" * 50  # opened and closed
    put(store, 2, 0, b"y" * 50)
    assert len(spare_files(tmp_path / "root")) == 1


def test_spares_count_against_the_budget_and_are_given_back_before_any_step(tmp_path, budget):
    budget.value = 1000
    store = Store(tmp_path / "root", budget)
    store.create_namespace(A, "ns", 1, 1, JOB)
    put(store, 1, 0, b"x" * 400)
    put(store, 2, 0, b"y" * 400)  # step 1's file (400 bytes and its header) is now a spare
    other = "other"
    store.create_namespace(A, other, 1, 5, JOB)
    put(store, 1, 0, b"z" * 500, name=other)  # too big for the spare, and 400 + spare + 500 > 1000
    assert spare_files(tmp_path / "root") == []
    assert read(store, 2, 0) == b"y" * 400  # the budget took the spare back, not the newest step
    assert store.used_bytes() == 900


def test_deleting_a_namespace_gives_back_the_spares(tmp_path, budget):
    store = Store(tmp_path / "root", budget)
    store.create_namespace(A, "ns", 1, 1, JOB)
    put(store, 1, 0, b"x" * 50)
    put(store, 2, 0, b"y" * 50)
    assert store.delete_namespace(A, "ns")
    assert spare_files(tmp_path / "root") == []


def test_a_restart_drops_the_spares(tmp_path, budget):
    store = Store(tmp_path / "root", budget)
    store.create_namespace(A, "ns", 1, 1, JOB)
    put(store, 1, 0, b"x" * 50)
    put(store, 2, 0, b"y" * 50)
    again = Store(tmp_path / "root", budget)
    assert spare_files(tmp_path / "root") == []
    assert read(again, 2, 0) == b"y" * 50
