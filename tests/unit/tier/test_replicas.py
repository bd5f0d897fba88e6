"""The tier's guarantee, on real tier services on loopback: once a shard's write was answered
and its copy landed on a neighbour, losing any one node loses no step, and the survivors copy
again what the lost node held, so every retained step is back on two nodes.

Managed tiered checkpointing "uses CPU memory for high-performance checkpoint storage with
automatic data replication across adjacent compute nodes" (AWS, "Amazon SageMaker HyperPod
managed tiered checkpointing", 2025); HyperPod replaces the failed node and the job resumes from
what the survivors hold."""

import json
import socket
import time

import pytest

from tier.repair import RepairSweep

from .conftest import ACCOUNT, wait_for
from .test_http import call, put

BODIES = {0: b"rank zero " * 1000, 1: b"rank one " * 1000}


def create(url: str, num_ranks: int, steps_retained: int = 3) -> None:
    path = f"/v1/cp/namespaces/ns?num_ranks={num_ranks}&steps_retained={steps_retained}"
    assert call(url, "POST", path)[0] == 201


def holders(cluster, rank: int, step: int) -> set[str]:
    """The running nodes whose memory holds the shard."""
    return {name for name, node in cluster.nodes.items() if node.store.holds(ACCOUNT, "ns", rank, step)}


def read(cluster, name: str, rank: int, step: int) -> tuple[int, bytes]:
    status, _, body = call(cluster.url(name), "GET", f"/v1/cp/checkpoints/ns/{rank}/{step}")
    return status, body


@pytest.mark.parametrize("lost", ["a", "b", "c"])
def test_any_one_node_lost_once_the_writes_were_answered_loses_no_step(cluster_of, lost):
    """What the library's `async_save` waits for is every rank's write answered: from then on,
    losing any one node loses nothing of the step."""
    cluster = cluster_of(["a", "b", "c"])
    create(cluster.url("a"), num_ranks=2)
    assert put(cluster.url("a"), 1, 0, BODIES[0])[0] == 200  # a two-node job: each rank writes
    assert put(cluster.url("b"), 1, 1, BODIES[1])[0] == 200  # to its own node's tier
    assert all(len(holders(cluster, rank, 1)) == 2 for rank in BODIES)  # at once, not eventually
    cluster.stop(lost)
    for survivor in cluster.nodes:
        assert call(cluster.url(survivor), "GET", "/v1/cp/checkpoints/ns/latest")[2] == b"[1]"
        for rank, body in BODIES.items():
            assert read(cluster, survivor, rank, 1) == (200, body)


def test_a_dead_successor_is_skipped_for_the_next_live_node(cluster_of):
    cluster = cluster_of(["a", "b", "c"])
    create(cluster.url("a"), num_ranks=1)
    cluster.stop("b")  # a's successor in the ring
    assert put(cluster.url("a"), 1, 0, BODIES[0])[0] == 200
    assert holders(cluster, 0, 1) == {"a", "c"}
    cluster.stop("a")
    assert read(cluster, "c", 0, 1) == (200, BODIES[0])


def test_a_neighbour_that_hangs_mid_copy_is_passed_over_for_the_next_live_one(cluster_of, tmp_path):
    with socket.socket() as silent:  # a hung machine: the kernel accepts, nothing answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        cluster = cluster_of(["a", "b"])
        document = json.loads((tmp_path / "config.json").read_text())
        document["peers"].insert(1, {"node": "hung", "url": f"http://127.0.0.1:{silent.getsockname()[1]}"})
        (tmp_path / "config.json").write_text(json.dumps(document))  # the ring: a, hung, b
        cluster.peer_io_timeout = 0.5
        for name in ("a", "b"):
            cluster.stop(name)
            cluster.start(name)
        create(cluster.url("a"), num_ranks=1)
        assert put(cluster.url("a"), 1, 0, BODIES[0])[0] == 200
        assert holders(cluster, 0, 1) == {"a", "b"}


def test_after_a_node_is_lost_the_survivors_restore_two_copies_of_every_retained_step(cluster_of):
    cluster = cluster_of(["a", "b", "c"])
    create(cluster.url("a"), num_ranks=1)
    for step in (1, 2):
        assert put(cluster.url("a"), step, 0, BODIES[0] * step)[0] == 200
    assert holders(cluster, 0, 1) == holders(cluster, 0, 2) == {"a", "b"}
    cluster.stop("a")  # b holds the only copies now: it copies them to its live successor
    wait_for(lambda: holders(cluster, 0, 1) == holders(cluster, 0, 2) == {"b", "c"})
    cluster.stop("b")  # a second loss, after the repair, still loses nothing
    assert call(cluster.url("c"), "GET", "/v1/cp/checkpoints/ns/latest")[2] == b"[2, 1]"
    assert read(cluster, "c", 0, 2) == (200, BODIES[0] * 2)


def test_a_failed_copy_is_retried_until_it_lands(cluster_of, monkeypatch, caplog):
    monkeypatch.setattr("tier.peers.DOWN_SECONDS", 0.5)  # how soon a failed peer is probed again
    cluster = cluster_of(["a", "b"])
    create(cluster.url("a"), num_ranks=1)
    cluster.stop("b")
    assert put(cluster.url("a"), 1, 0, BODIES[0])[0] == 200  # b is a's only neighbour
    assert any("answered with one copy" in record.getMessage() for record in caplog.records)
    cluster.start("b")
    wait_for(lambda: holders(cluster, 0, 1) == {"a", "b"})


def test_a_copy_the_full_queue_dropped_is_made_by_the_repair_sweep(cluster_of, monkeypatch):
    monkeypatch.setattr("tier.replication.QUEUE_LENGTH", 1)
    monkeypatch.setattr("tier.replication.WORKERS", 0)  # the queue stays full: step 1's copy waits
    cluster = cluster_of(["a", "b"])
    cluster.stop("a")
    cluster.replica_wait_seconds = 0.1  # step 1's write waits for a copy no worker makes
    cluster.start("a")
    create(cluster.url("a"), num_ranks=1)
    for step in (1, 2):
        assert put(cluster.url("a"), step, 0, BODIES[0])[0] == 200
    wait_for(lambda: holders(cluster, 0, 2) == {"a", "b"})  # step 2's copy was dropped, then swept


def test_a_copy_owed_for_a_step_retention_dropped_is_not_made(cluster_of, monkeypatch):
    monkeypatch.setattr("tier.peers.DOWN_SECONDS", 0.5)
    cluster = cluster_of(["a", "b"])
    create(cluster.url("a"), num_ranks=1, steps_retained=1)
    cluster.stop("b")
    for step in (1, 2, 3):
        assert put(cluster.url("a"), step, 0, BODIES[0])[0] == 200
    replicator = cluster.nodes["a"].replicator
    wait_for(lambda: not any(replicator.pending((ACCOUNT, "ns", 0, step)) for step in (1, 2, 3)))
    cluster.start("b")
    wait_for(lambda: holders(cluster, 0, 3) == {"a", "b"})
    assert cluster.nodes["b"].store.inventory(ACCOUNT, "ns") == {3: [0]}


def test_a_namespace_idle_past_its_grace_is_left_to_expire_not_copied_around(cluster_of, monkeypatch):
    """Copying an idle namespace to another node would keep it alive there (expiry.py)."""
    monkeypatch.setattr("tier.peers.DOWN_SECONDS", 0)
    cluster = cluster_of(["a", "b"])
    create(cluster.url("a"), num_ranks=1)
    node = cluster.nodes["a"]
    node.repair.stop()  # this test runs a's sweeps itself
    cluster.stop("b")
    assert put(cluster.url("a"), 1, 0, BODIES[0])[0] == 200
    cluster.start("b")

    def sweep(clock) -> tuple[int, int]:
        return RepairSweep(node.store, node.peers, node.replicator, 1.0, lambda: 3600, clock).sweep_once()

    assert sweep(lambda: time.time() + 7200) == (0, 0)  # two hours on: unused past its grace
    assert holders(cluster, 0, 1) == {"a"}
    assert sweep(time.time) == (1, 0)
    assert holders(cluster, 0, 1) == {"a", "b"}


def test_a_namespace_deleted_while_a_node_was_down_is_not_brought_back_by_that_node(cluster_of, monkeypatch):
    """The delete reaches the live nodes only; the node that was down returns still holding the
    namespace. It must serve it nowhere else and not copy it around: the first peer it offers a
    copy to refuses (deleted after that copy was made), and it drops the namespace."""
    monkeypatch.setattr("tier.peers.DOWN_SECONDS", 0.2)
    cluster = cluster_of(["a", "b", "c"])
    create(cluster.url("a"), num_ranks=1)
    assert put(cluster.url("a"), 1, 0, BODIES[0])[0] == 200
    assert holders(cluster, 0, 1) == {"a", "b"}
    cluster.stop("b")
    assert call(cluster.url("a"), "DELETE", "/v1/cp/namespaces/ns")[0] == 200

    cluster.start("b")  # b's memory still holds step 1; its successor c has the tombstone
    for live in ("a", "c"):
        assert call(cluster.url(live), "GET", "/v1/cp/namespaces/ns")[0] == 404
        assert call(cluster.url(live), "GET", "/v1/cp/checkpoints/ns/latest")[0] == 404
        assert read(cluster, live, 0, 1)[0] == 404
    wait_for(lambda: cluster.nodes["b"].store.namespace(ACCOUNT, "ns") is None)
    assert holders(cluster, 0, 1) == set()


def test_a_namespace_created_again_after_a_delete_is_copied_as_a_new_one(cluster_of):
    cluster = cluster_of(["a", "b"])
    create(cluster.url("a"), num_ranks=1)
    assert call(cluster.url("a"), "DELETE", "/v1/cp/namespaces/ns")[0] == 200  # b has a tombstone

    create(cluster.url("a"), num_ranks=1)
    assert put(cluster.url("a"), 1, 0, BODIES[0])[0] == 200

    assert holders(cluster, 0, 1) == {"a", "b"}
    assert read(cluster, "b", 0, 1) == (200, BODIES[0])
