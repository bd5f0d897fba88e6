"""Rank layouts of the placement strategies, computed without processes."""

import pytest

torch = pytest.importorskip("torch")
from smdistributed.modelparallel.torch.layout import all_dp_groups, all_mp_groups, rank_layout  # noqa: E402


def test_the_seeds_example_of_8_processes_and_2_partitions_cluster():
    assert all_mp_groups(8, 2, "cluster") == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert all_dp_groups(8, 2, "cluster") == [(0, 2, 4, 6), (1, 3, 5, 7)]
    assert [(rank_layout(r, 8, 2, "cluster").mp_rank, rank_layout(r, 8, 2, "cluster").dp_rank)
            for r in range(8)] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)]


def test_the_seeds_example_of_8_processes_and_2_partitions_spread():
    assert all_mp_groups(8, 2, "spread") == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert all_dp_groups(8, 2, "spread") == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert [(rank_layout(r, 8, 2, "spread").mp_rank, rank_layout(r, 8, 2, "spread").dp_rank)
            for r in range(8)] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3)]


@pytest.mark.parametrize("world_size,partitions", [(1, 1), (2, 1), (2, 2), (4, 2), (6, 3), (8, 4), (12, 4)])
@pytest.mark.parametrize("strategy", ["cluster", "spread"])
def test_groups_partition_the_world_and_ranks_follow_the_strategy(world_size, partitions, strategy):
    replicas = world_size // partitions
    mp_groups, dp_groups = all_mp_groups(world_size, partitions, strategy), all_dp_groups(
        world_size, partitions, strategy)
    assert len(mp_groups) == replicas and all(len(g) == partitions for g in mp_groups)
    assert len(dp_groups) == partitions and all(len(g) == replicas for g in dp_groups)
    assert sorted(r for g in mp_groups for r in g) == list(range(world_size))
    assert sorted(r for g in dp_groups for r in g) == list(range(world_size))
    for rank in range(world_size):
        layout = rank_layout(rank, world_size, partitions, strategy)
        if strategy == "cluster":
            assert (layout.mp_rank, layout.dp_rank) == (rank % partitions, rank // partitions)
        else:
            assert (layout.mp_rank, layout.dp_rank) == (rank // replicas, rank % replicas)
        assert layout.mp_group[layout.mp_rank] == rank and layout.dp_group[layout.dp_rank] == rank
        assert list(layout.mp_group) == sorted(layout.mp_group)  # ascending = mp_rank order
        # one MP group holds each partition once: its members are in different DP groups
        assert {rank_layout(r, world_size, partitions, strategy).mp_rank for r in layout.mp_group} == set(
            range(partitions))


def test_a_world_not_divisible_by_the_partitions_is_refused():
    with pytest.raises(ValueError, match=r"processes \(6\) must be divisible .* partitions \(4\)"):
        all_mp_groups(6, 4, "cluster")
    with pytest.raises(ValueError, match="outside the world"):
        rank_layout(4, 4, 2, "cluster")
