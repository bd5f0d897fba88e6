"""The store's rules without sockets: checksums, completeness, retention, the RAM budget,
per-account namespaces, and what a restart finds."""

import base64
import errno
import io
import json

import pytest
import xxhash

from tier import rules
from tier.errors import TierError
from tier.store import Store

A, B = "111111111111", "222222222222"
JOB = "arn:aws:sagemaker:us-east-1:111111111111:training-job/j"


def meta(body: bytes) -> str:
    digest = base64.b64encode(xxhash.xxh3_128(body).digest()).decode()
    return json.dumps({"checksum": digest, "algorithm": "xxh3_128"})


class Budget:
    def __init__(self, value: int):
        self.value = value

    def __call__(self) -> int:
        return self.value


@pytest.fixture
def budget():
    return Budget(1_000_000)


@pytest.fixture
def store(tmp_path, budget):
    return Store(tmp_path / "root", budget)


def put(store: Store, step: int, rank: int, body: bytes, name: str = "ns", account: str = A):
    return store.put_shard(account, name, rank, step, len(body), meta(body), io.BytesIO(body))


def read(store: Store, step: int, rank: int, name: str = "ns", account: str = A) -> bytes | None:
    opened = store.open_shard(account, name, rank, step)
    if opened is None:
        return None
    shard, handle = opened
    with handle:
        return handle.read()


def complete(store: Store, name: str = "ns", account: str = A) -> list[int]:
    record = store.namespace(account, name)
    return rules.complete_steps(store.inventory(account, name), record.num_ranks)


def test_a_shard_is_kept_with_its_checksum_header(store):
    store.create_namespace(A, "ns", 2, 3, JOB)
    shard = put(store, 1, 0, b"weights" * 1000)
    assert read(store, 1, 0) == b"weights" * 1000
    assert shard.shard_meta == meta(b"weights" * 1000)
    assert store.used_bytes() == 7000


def test_a_checksum_mismatch_is_refused_and_nothing_is_kept(store, tmp_path):
    store.create_namespace(A, "ns", 2, 3, JOB)
    with pytest.raises(TierError) as refused:
        store.put_shard(A, "ns", 0, 1, 5, meta(b"other"), io.BytesIO(b"right"))
    assert refused.value.status == 400
    assert read(store, 1, 0) is None
    assert store.used_bytes() == 0
    assert list((tmp_path / "root" / "tmp").iterdir()) == []
    put(store, 1, 0, b"right")  # the reservation was given back


@pytest.mark.parametrize("shard_meta", [None, "{}", '{"checksum": "x", "algorithm": "md5"}', "not json",
                                        '{"checksum": "AAAA", "algorithm": "xxh3_128"}'])
def test_a_missing_or_malformed_shard_meta_is_refused(store, shard_meta):
    store.create_namespace(A, "ns", 1, 3, JOB)
    with pytest.raises(TierError) as refused:
        store.put_shard(A, "ns", 0, 1, 1, shard_meta, io.BytesIO(b"x"))
    assert refused.value.status == 400


def test_a_body_shorter_than_declared_leaves_nothing(store):
    store.create_namespace(A, "ns", 1, 3, JOB)
    with pytest.raises(TierError):
        store.put_shard(A, "ns", 0, 1, 10, meta(b"0123456789"), io.BytesIO(b"01234"))
    assert read(store, 1, 0) is None and store.used_bytes() == 0


def test_a_step_is_complete_once_every_rank_is_there(store):
    store.create_namespace(A, "ns", 3, 3, JOB)
    put(store, 5, 0, b"a")
    put(store, 5, 1, b"b")
    assert complete(store) == []
    put(store, 5, 2, b"metadata")
    assert complete(store) == [5]


def test_retention_keeps_the_newest_complete_steps(store):
    store.create_namespace(A, "ns", 2, 2, JOB)
    for step in (1, 2, 3, 4):
        put(store, step, 0, b"x" * 10)
        put(store, step, 1, b"y" * 10)
    assert sorted(store.inventory(A, "ns")) == [3, 4]
    assert read(store, 1, 0) is None
    assert store.used_bytes() == 40


def test_a_rank_outside_the_namespace_is_refused(store):
    store.create_namespace(A, "ns", 2, 3, JOB)
    with pytest.raises(TierError) as refused:
        put(store, 1, 2, b"x")
    assert refused.value.status == 400


def test_writing_to_an_absent_namespace_is_not_found(store):
    with pytest.raises(TierError) as refused:
        put(store, 1, 0, b"x")
    assert refused.value.status == 404


def test_creating_an_existing_namespace_again_keeps_it_unless_its_shape_differs(store):
    first, created = store.create_namespace(A, "ns", 2, 3, JOB)
    again, created_again = store.create_namespace(A, "ns", 2, 3, JOB)
    assert created and not created_again and again == first
    with pytest.raises(TierError) as refused:
        store.create_namespace(A, "ns", 4, 3, JOB)
    assert refused.value.status == 409


def test_namespaces_are_per_account(store):
    store.create_namespace(A, "shared-name", 1, 3, JOB)
    put(store, 1, 0, b"account a's", name="shared-name")
    assert store.namespace(B, "shared-name") is None
    assert read(store, 1, 0, name="shared-name", account=B) is None
    store.create_namespace(B, "shared-name", 1, 3, "")
    put(store, 1, 0, b"account b's", name="shared-name", account=B)
    assert read(store, 1, 0, name="shared-name") == b"account a's"
    assert read(store, 1, 0, name="shared-name", account=B) == b"account b's"
    assert store.delete_namespace(B, "shared-name")
    assert read(store, 1, 0, name="shared-name") == b"account a's"


def test_a_full_budget_evicts_old_complete_steps_but_never_the_newest(store, budget):
    budget.value = 100
    store.create_namespace(A, "ns", 1, 10, JOB)
    put(store, 1, 0, b"x" * 40)
    put(store, 2, 0, b"x" * 40)
    put(store, 3, 0, b"x" * 40)  # evicts step 1
    assert sorted(store.inventory(A, "ns")) == [2, 3]
    assert store.used_bytes() <= 100


def test_a_write_that_cannot_fit_is_refused_with_507_and_keeps_what_is_there(store, budget):
    budget.value = 100
    store.create_namespace(A, "ns", 2, 10, JOB)
    put(store, 1, 0, b"x" * 40)
    put(store, 1, 1, b"x" * 40)  # step 1 complete: the newest, so protected
    with pytest.raises(TierError) as refused:
        put(store, 2, 0, b"x" * 40)
    assert refused.value.status == 507
    assert "full" in refused.value.message
    assert complete(store) == [1] and store.used_bytes() == 80
    with pytest.raises(TierError) as too_big:
        put(store, 2, 0, b"x" * 101)
    assert too_big.value.status == 507


def test_the_budget_evicts_across_namespaces_oldest_first(store, budget):
    budget.value = 100
    store.create_namespace(A, "old", 1, 10, JOB)
    store.create_namespace(B, "new", 1, 10, JOB)
    put(store, 1, 0, b"x" * 30, name="old")
    put(store, 2, 0, b"x" * 30, name="old")
    put(store, 1, 0, b"x" * 30, name="new", account=B)
    put(store, 2, 0, b"x" * 30, name="new", account=B)  # evicts "old" step 1, the oldest written
    assert sorted(store.inventory(A, "old")) == [2]
    assert sorted(store.inventory(B, "new")) == [1, 2]


def test_a_lower_budget_from_the_config_applies_to_the_next_write(store, budget):
    store.create_namespace(A, "ns", 1, 10, JOB)
    for step in (1, 2, 3):
        put(store, step, 0, b"x" * 40)
    budget.value = 50
    put(store, 4, 0, b"x" * 10)
    assert sorted(store.inventory(A, "ns")) == [3, 4]


def test_the_filesystem_free_space_counts_too(tmp_path, budget):
    store = Store(tmp_path / "root", budget, free_bytes=lambda path: 0)
    store.create_namespace(A, "ns", 1, 3, JOB)
    with pytest.raises(TierError) as refused:
        put(store, 1, 0, b"x")
    assert refused.value.status == 507


def test_a_restarted_store_finds_its_namespaces_and_shards(tmp_path, budget):
    first = Store(tmp_path / "root", budget)
    first.create_namespace(A, "ns", 2, 3, JOB)
    put(first, 7, 0, b"zero")
    put(first, 7, 1, b"one")
    again = Store(tmp_path / "root", budget)
    assert again.namespace(A, "ns").num_ranks == 2
    assert again.namespace(A, "ns").owner_job_arn == JOB
    assert complete(again) == [7]
    assert read(again, 7, 1) == b"one"
    assert again.used_bytes() == 7


def test_a_restart_drops_half_written_and_damaged_files(tmp_path, budget):
    first = Store(tmp_path / "root", budget)
    first.create_namespace(A, "ns", 2, 3, JOB)
    shard = put(first, 7, 0, b"zero" * 100)
    (tmp_path / "root" / "tmp" / "partial").write_bytes(b"half a body")
    damaged = shard.path.with_name("1.shard")
    damaged.write_bytes(shard.path.read_bytes()[:-10])  # a body cut short
    again = Store(tmp_path / "root", budget)
    assert again.inventory(A, "ns") == {7: [0]}
    assert not damaged.exists()
    assert list((tmp_path / "root" / "tmp").iterdir()) == []


def test_a_reader_keeps_its_shard_while_it_is_evicted(store):
    store.create_namespace(A, "ns", 1, 1, JOB)
    put(store, 1, 0, b"first")
    shard, handle = store.open_shard(A, "ns", 0, 1)
    put(store, 2, 0, b"second")  # retention drops step 1
    with handle:
        assert handle.read() == b"first"
    assert read(store, 1, 0) is None


def test_deleting_a_namespace_frees_its_bytes(store):
    store.create_namespace(A, "ns", 1, 3, JOB)
    put(store, 1, 0, b"x" * 50)
    assert store.delete_namespace(A, "ns")
    assert store.used_bytes() == 0 and store.namespace(A, "ns") is None
    assert not store.delete_namespace(A, "ns")


def test_a_namespace_name_with_slashes_or_dots_stays_inside_the_root(store, tmp_path):
    store.create_namespace(A, "../../escape", 1, 3, JOB)
    put(store, 1, 0, b"x", name="../../escape")
    assert not (tmp_path / "escape").exists()
    assert read(store, 1, 0, name="../../escape") == b"x"


def test_last_use_and_owner_follow_the_job_that_uses_the_namespace(tmp_path, budget):
    now = [1000.0]
    store = Store(tmp_path / "root", budget, clock=lambda: now[0])
    store.create_namespace(A, "ns", 1, 3, JOB)
    now[0] = 2000.0
    store.touch(A, "ns", JOB + "-retry")
    assert store.unused_since(1500.0) == []
    again = Store(tmp_path / "root", budget)
    assert again.namespace(A, "ns").owner_job_arn == JOB + "-retry"


def test_a_peers_copy_keeps_the_writers_last_use_so_an_idle_namespace_still_expires(tmp_path, budget):
    """A repair copy of an idle namespace must not restart its grace period on the node it lands on."""
    now = [5000.0]
    store = Store(tmp_path / "root", budget, clock=lambda: now[0])
    store.create_namespace(A, "ns", 1, 3, JOB)
    store.touch(A, "ns", JOB, used_at=1000.0)  # an older use never moves last use back
    assert store.namespace(A, "ns").last_used == 5000.0
    now[0] = 9000.0
    store.touch(A, "ns", JOB, used_at=6000.0)
    assert store.unused_since(7000.0) == [store.namespace(A, "ns")]


def test_a_shard_damaged_in_memory_reads_as_absent_and_is_dropped(store):
    store.create_namespace(A, "ns", 1, 3, JOB)
    shard = put(store, 1, 0, b"x" * 100)
    shard.path.write_bytes(b"garbage")
    assert store.open_shard(A, "ns", 0, 1) is None
    assert store.inventory(A, "ns") == {} and store.used_bytes() == 0


def test_an_account_cannot_create_namespaces_without_end(store, monkeypatch):
    monkeypatch.setattr("tier.store.MAX_NAMESPACES_PER_ACCOUNT", 2)
    store.create_namespace(A, "one", 1, 3, JOB)
    store.create_namespace(A, "two", 1, 3, JOB)
    with pytest.raises(TierError) as refused:
        store.create_namespace(A, "three", 1, 3, JOB)
    assert refused.value.status == 409
    store.create_namespace(B, "one", 1, 3, JOB)


class FullMemory(io.RawIOBase):
    """What writing to a full tmpfs raises."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_full_memory_filesystem_is_a_507_not_a_dropped_connection(store, monkeypatch):
    store.create_namespace(A, "ns", 1, 3, JOB)
    monkeypatch.setattr("builtins.open", FullMemory)
    with pytest.raises(TierError) as refused:
        put(store, 1, 0, b"x" * 10)
    monkeypatch.undo()
    assert refused.value.status == 507
    assert read(store, 1, 0) is None and store.used_bytes() == 0


def test_a_copy_of_a_namespace_older_than_its_delete_is_refused_until_it_is_created_anew(tmp_path, budget):
    clock = iter([100.0, 200.0, 300.0]).__next__  # created, deleted, created again
    store = Store(tmp_path / "root", budget, clock=clock)
    old, _ = store.create_namespace(A, "ns", 1, 3, "")
    store.delete_namespace(A, "ns")

    assert store.adopt_namespace(old) is None and store.deleted_since_created(old)
    anew, _ = store.create_namespace(A, "ns", 1, 3, "")
    assert anew.created == 300.0 and not store.deleted_since_created(old)  # made anew: no tombstone

    store.delete_namespace(A, "ns", unused_since=400.0)  # expiry leaves no tombstone
    assert store.adopt_namespace(old) == old


def test_tombstones_older_than_the_grace_are_forgotten(tmp_path, budget):
    clock = iter([100.0, 200.0]).__next__
    store = Store(tmp_path / "root", budget, clock=clock)
    old, _ = store.create_namespace(A, "ns", 1, 3, "")
    store.delete_namespace(A, "ns")

    store.forget_deletions(before=150.0)
    assert store.deleted_since_created(old)
    store.forget_deletions(before=250.0)
    assert store.adopt_namespace(old) == old
