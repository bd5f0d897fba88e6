"""Which global ranks form the model-parallel (MP) and data-parallel (DP) groups.

With W processes and P partitions there are D = W / P model replicas. An MP group holds one
replica (P ranks, one per partition); a DP group holds one partition across all replicas
(D ranks). Within both groups, ascending global rank order is the mp_rank / dp_rank order.

- cluster (the default): the ranks of one replica are adjacent.
  mp_rank = r % P, dp_rank = r // P. W=8, P=2: MP groups [0,1] [2,3] [4,5] [6,7],
  DP groups [0,2,4,6] [1,3,5,7].
- spread: the ranks of one replica are D apart.
  mp_rank = r // D, dp_rank = r % D. W=8, P=2: MP groups [0,4] [1,5] [2,6] [3,7],
  DP groups [0,1,2,3] [4,5,6,7].
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class RankLayout:
    mp_rank: int
    dp_rank: int
    mp_group: tuple
    dp_group: tuple


def check_divisible(world_size, partitions):
    if world_size % partitions:
        raise ValueError(
            f"the number of processes ({world_size}) must be divisible by the number of "
            f"partitions ({partitions})"
        )


def all_mp_groups(world_size, partitions, strategy):
    """Every MP group, in the order every rank creates them (by dp_rank)."""
    return [tuple(row) for row in _rank_grid(world_size, partitions, strategy)]


def all_dp_groups(world_size, partitions, strategy):
    """Every DP group, in the order every rank creates them (by mp_rank)."""
    return [tuple(column) for column in zip(*_rank_grid(world_size, partitions, strategy), strict=True)]


def _rank_grid(world_size, partitions, strategy):
    """The global ranks, a row by dp_rank and a column by mp_rank: "cluster" puts an MP group's
    ranks next to each other, "spread" a DP group's."""
    check_divisible(world_size, partitions)
    replicas = world_size // partitions
    if strategy == "cluster":
        return [[d * partitions + m for m in range(partitions)] for d in range(replicas)]
    return [[d + m * replicas for m in range(partitions)] for d in range(replicas)]


def rank_layout(rank, world_size, partitions, strategy):
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside the world of {world_size} processes")
    mp_group = next(g for g in all_mp_groups(world_size, partitions, strategy) if rank in g)
    dp_group = next(g for g in all_dp_groups(world_size, partitions, strategy) if rank in g)
    return RankLayout(
        mp_rank=mp_group.index(rank), dp_rank=dp_group.index(rank), mp_group=mp_group, dp_group=dp_group
    )
