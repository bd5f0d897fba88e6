"""AWS's own `InMemoryCheckpointClient` (amzn-sagemaker-checkpointing 1.1.3, the class its DCP
writer and reader use) against tier nodes on 127.0.0.1: the wire protocol as the library speaks
it, replication, and a node that lost its memory answering from its neighbour's replica."""

import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from amzn_sagemaker_checkpointing.config.in_memory_client import InMemoryClientConfig
from amzn_sagemaker_checkpointing.storage.clients.inmemory.exceptions import InMemoryServerError
from amzn_sagemaker_checkpointing.storage.clients.inmemory.inmemory_client import InMemoryCheckpointClient

from .conftest import ACCOUNT, wait_for

WORLD = 2  # data ranks 0 and 1; the DCP metadata is rank 2


def client(url: str, rank: int = 0, namespace: str = "job-ckpt") -> InMemoryCheckpointClient:
    config = InMemoryClientConfig(base_url=url)
    return InMemoryCheckpointClient(namespace, rank=rank, world_size=WORLD, config=config)


def save_step(writer: InMemoryCheckpointClient, step: int, size: int = 4096) -> None:
    """What the DCP writer does: one blob per rank, then the metadata once every rank succeeded."""
    for rank in range(WORLD):
        writer.put_checkpoint(step, bytes([rank, step % 256]) * (size // 2), rank=rank)
    writer.put_checkpoint(step, f"metadata {step}".encode(), metadata_index=0)



def test_the_library_saves_lists_and_loads_through_the_tier(cluster_of):
    cluster = cluster_of(["a"])
    writer = client(cluster.url("a"))
    assert writer.get_or_create_namespace()["num_ranks"] == WORLD + 1
    for step in (10, 20, 30, 40):
        save_step(writer, step)
    writer.put_checkpoint(50, b"rank 0 only", rank=0)  # an unfinished step is not advertised
    assert writer.get_latest_checkpoints(limit=3) == [40, 30, 20]
    assert writer.get_checkpoint(40, rank=1) == bytes([1, 40]) * 2048  # the client checks Shard-Meta
    assert writer.get_checkpoint(40, metadata_index=0) == b"metadata 40"
    assert writer.get_checkpoint(10, rank=0) is None  # beyond steps_retained=3
    writer.delete_checkpoint(40, metadata_index=0)
    assert writer.get_latest_checkpoints(limit=3) == [30, 20]
    writer.delete_namespace()
    assert writer.get_namespace_config() == {}
    assert writer.get_latest_checkpoints() == []


def test_a_write_over_the_budget_fails_the_way_the_writer_falls_back_to_s3(cluster_of):
    cluster = cluster_of(["a"], budget_bytes=10_000)
    writer = client(cluster.url("a"))
    writer.get_or_create_namespace()
    save_step(writer, 1, size=4000)
    with pytest.raises(InMemoryServerError, match="InsufficientStorage"):
        writer.put_checkpoint(2, b"x" * 4000, rank=0)  # step 1 is the newest complete: kept
    assert writer.get_latest_checkpoints() == [1]


def test_shards_reach_the_neighbour_and_a_wiped_node_answers_from_its_replica(cluster_of):
    cluster = cluster_of(["a", "b"])
    writer = client(cluster.url("a"))
    writer.get_or_create_namespace()
    save_step(writer, 7)
    replica = cluster.nodes["b"].store
    wait_for(lambda: replica.inventory(ACCOUNT, "job-ckpt") == {7: [0, 1, 2]})

    cluster.stop("a")
    shutil.rmtree(cluster.root("a"))  # node a lost its memory (a reboot, a new instance)
    cluster.start("a")
    assert cluster.nodes["a"].store.inventory(ACCOUNT, "job-ckpt") is None

    reader = client(cluster.url("a"), rank=1)
    assert reader.get_or_create_namespace()["num_ranks"] == WORLD + 1  # found on b, not re-created
    assert reader.get_latest_checkpoints(limit=3) == [7]
    assert reader.get_checkpoint(7, rank=0) == bytes([0, 7]) * 2048
    assert reader.get_checkpoint(7, metadata_index=0) == b"metadata 7"
    save_step(reader, 8)  # and a resumed job writes to a again
    assert reader.get_latest_checkpoints(limit=3) == [8, 7]


def test_each_rank_writes_to_its_own_node_and_every_node_lists_the_whole_step(cluster_of):
    cluster = cluster_of(["a", "b", "c"])
    on_a, on_c = client(cluster.url("a"), rank=0), client(cluster.url("c"), rank=1)
    on_a.get_or_create_namespace()
    on_a.put_checkpoint(3, b"rank 0", rank=0)
    on_c.put_checkpoint(3, b"rank 1", rank=1)
    assert on_a.get_latest_checkpoints() == []
    on_a.put_checkpoint(3, b"metadata", metadata_index=0)
    for name in "abc":
        assert client(cluster.url(name)).get_latest_checkpoints() == [3]
    assert client(cluster.url("b")).get_checkpoint(3, rank=1) == b"rank 1"


def test_ranks_writing_at_once_each_get_their_own_shard_back(cluster_of):
    cluster = cluster_of(["a", "b"])
    world = 8
    clients = [InMemoryCheckpointClient("wide", rank=rank, world_size=world,
                                        config=InMemoryClientConfig(base_url=cluster.url("a")))
               for rank in range(world)]
    clients[0].get_or_create_namespace()
    blobs = [bytes([rank]) * (2 * 1024 * 1024 + rank) for rank in range(world)]
    with ThreadPoolExecutor(world) as pool:
        list(pool.map(lambda rank: clients[rank].put_checkpoint(1, blobs[rank]), range(world)))
    clients[0].put_checkpoint(1, b"metadata", metadata_index=0)
    assert clients[0].get_latest_checkpoints() == [1]
    with ThreadPoolExecutor(world) as pool:
        assert list(pool.map(lambda rank: clients[rank].get_checkpoint(1), range(world))) == blobs


def test_a_restarted_service_serves_what_it_held(cluster_of):
    cluster = cluster_of(["a"])
    writer = client(cluster.url("a"))
    writer.get_or_create_namespace()
    save_step(writer, 5)
    cluster.stop("a")
    cluster.start("a")  # same root: a supervisor restart, or a new binary
    reader = client(cluster.url("a"), rank=1)
    assert reader.get_latest_checkpoints() == [5]
    assert reader.get_checkpoint(5, rank=1) == bytes([1, 5]) * 2048
