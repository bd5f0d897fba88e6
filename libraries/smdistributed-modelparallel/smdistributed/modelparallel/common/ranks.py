"""The MPI-basics functions (smp.rank(), smp.mp_rank(), ...) over a variant's state.

A variant's state has `rank`, `world_size`, `local_rank`, `local_size`, `mp_rank`, `dp_rank`
and its MP and DP groups as `mp` and `dp`, whose `ranks` are global ranks in group-rank order.
"""

from collections import namedtuple

RankFunctions = namedtuple("RankFunctions", "rank size mp_rank mp_size dp_rank dp_size local_rank local_size "
                                            "get_mp_group get_dp_group")


def rank_functions(state):
    """The functions a variant exports, each reading `state()` (which raises before smp.init()), as
    a RankFunctions tuple: `rank, size, ... = rank_functions(state)`."""

    def rank():
        return state().rank

    def size():
        return state().world_size

    def mp_rank():
        return state().mp_rank

    def mp_size():
        return len(state().mp.ranks)

    def dp_rank():
        return state().dp_rank

    def dp_size():
        return len(state().dp.ranks)

    def local_rank():
        return state().local_rank

    def local_size():
        return state().local_size

    def get_mp_group():
        """The global ranks of this process's MP group, in mp_rank order."""
        return list(state().mp.ranks)

    def get_dp_group():
        """The global ranks of this process's DP group, in dp_rank order."""
        return list(state().dp.ranks)

    return RankFunctions(rank, size, mp_rank, mp_size, dp_rank, dp_size, local_rank, local_size, get_mp_group,
                         get_dp_group)
