"""Ranks, groups and the communication primitives in worlds of 4 gloo processes (2 partitions)."""

import pytest

torch = pytest.importorskip("torch")

from .scenarios import payload_from  # noqa: E402

EXPECTED_GROUPS = {  # W=4, P=2
    "cluster": {"mp": [[0, 1], [0, 1], [2, 3], [2, 3]], "dp": [[0, 2], [1, 3], [0, 2], [1, 3]]},
    "spread": {"mp": [[0, 2], [1, 3], [0, 2], [1, 3]], "dp": [[0, 1], [0, 1], [2, 3], [2, 3]]},
}


@pytest.fixture(params=["cluster", "spread"])
def world(request):
    """The cluster world is started as torchrun starts ranks, the spread one as mpirun does."""
    return request.getfixturevalue(f"world4_{request.param}"), request.param


def test_ranks_sizes_and_groups_follow_the_placement_strategy(world):
    world, strategy = world
    layouts = world.run("layout")
    for rank, layout in enumerate(layouts):
        assert layout["rank"] == rank and layout["size"] == 4
        assert layout["local_rank"] == rank and layout["local_size"] == 4
        assert layout["mp_size"] == 2 and layout["dp_size"] == 2
        assert layout["mp_group"] == EXPECTED_GROUPS[strategy]["mp"][rank]
        assert layout["dp_group"] == EXPECTED_GROUPS[strategy]["dp"][rank]
        assert layout["mp_group"][layout["mp_rank"]] == rank and layout["dp_group"][layout["dp_rank"]] == rank


def test_allgather_returns_every_members_object_in_group_rank_order(world):
    world, strategy = world
    for rank, gathered in enumerate(world.run("allgather")):
        assert gathered["world"] == [payload_from(r) for r in range(4)]
        assert gathered["mp"] == [{"rank": r} for r in EXPECTED_GROUPS[strategy]["mp"][rank]]
        assert [int(t) for t in gathered["dp"]] == EXPECTED_GROUPS[strategy]["dp"][rank]


@pytest.mark.parametrize("rank_type", ["WORLD_RANK", "MP_RANK", "DP_RANK"])
def test_send_and_recv_from_exchange_objects_within_the_rank_types_group(world, rank_type):
    world, strategy = world
    received = world.run("send_and_receive", rank_type)
    groups = {"WORLD_RANK": [[0, 1, 2, 3]] * 4, "MP_RANK": EXPECTED_GROUPS[strategy]["mp"],
              "DP_RANK": EXPECTED_GROUPS[strategy]["dp"]}[rank_type]
    for rank, objects in enumerate(received):
        first, last = groups[rank][0], groups[rank][-1]
        if rank == first:
            assert objects[0]["reply from"] == last and torch.equal(objects[0]["tensor"], torch.ones(2))
        elif rank == last:
            assert objects == [payload_from(first)]
        else:
            assert objects == []


@pytest.mark.parametrize("group", ["WORLD", "MP_GROUP", "DP_GROUP"])
def test_broadcast_reaches_every_member_through_recv_from(world, group):
    world, strategy = world
    received = world.run("broadcast", group)
    groups = {"WORLD": [[0, 1, 2, 3]] * 4, "MP_GROUP": EXPECTED_GROUPS[strategy]["mp"],
              "DP_GROUP": EXPECTED_GROUPS[strategy]["dp"]}[group]
    for rank, obj in enumerate(received):
        root = groups[rank][0]
        if rank == root:
            assert obj is None
        else:
            assert obj == payload_from(root)


def test_send_returns_only_after_the_receiver_called_recv_from(world4_cluster, tmp_path):
    results = world4_cluster.run("send_waits_for_receiver", str(tmp_path))
    assert results[0] is True  # the marker written right before recv_from existed when send returned
    assert results[1] == "synchronous"


def test_send_returns_only_after_the_receiver_has_the_object(world4_cluster, tmp_path):
    results = world4_cluster.run("send_waits_until_the_object_is_received", str(tmp_path))
    assert results[0] is True  # the marker the receiver writes once it unpickled the object
    assert results[1] == str(tmp_path / "receiver-unpickled")


def test_broadcast_returns_only_after_every_receiver_called_recv_from(world4_cluster, tmp_path):
    results = world4_cluster.run("broadcast_waits_for_receivers", str(tmp_path))
    assert results[0] == [1, 2, 3]
    assert results[1:] == ["to everyone"] * 3


@pytest.mark.parametrize("group", ["WORLD", "MP_GROUP", "DP_GROUP"])
def test_barrier_waits_for_the_groups_last_member(world4_spread, tmp_path, group):
    assert world4_spread.run("barrier_waits", group, str(tmp_path)) == [True] * 4


def test_wrong_ranks_and_groups_are_refused_clearly(world4_cluster):
    assert world4_cluster.run("wrong_ranks_and_groups") == [True] * 4



def test_a_process_without_a_launcher_is_a_world_of_one(world1_no_launcher):
    [layout] = world1_no_launcher.run("layout")
    assert layout == {"rank": 0, "size": 1, "mp_rank": 0, "mp_size": 1, "dp_rank": 0, "dp_size": 1,
                      "local_rank": 0, "local_size": 1, "mp_group": [0], "dp_group": [0]}
    [gathered] = world1_no_launcher.run("allgather")
    assert gathered["world"] == [payload_from(0)] and gathered["mp"] == [{"rank": 0}]
    assert world1_no_launcher.run("step_splits_arguments") == [4]  # microbatches given to smp.init()
