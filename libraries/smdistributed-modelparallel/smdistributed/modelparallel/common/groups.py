"""CommGroup and RankType, and how a (rank, RankType) pair names a peer process.

Both variants' states hold this process's world, MP group and DP group (`world`, `mp`, `dp`), whose
`ranks` are global ranks in group-rank order, so the checks and the translation to a global rank
are the same for both.
"""

import enum


class CommGroup(enum.Enum):
    WORLD = 0
    MP_GROUP = 1
    DP_GROUP = 2
    # SageMaker's names without tensor parallelism: the pipeline group is the MP group, the
    # reduced-data-parallel group the DP group (enum aliases: the same members)
    PP_GROUP = 1
    RDP_GROUP = 2


class RankType(enum.Enum):
    WORLD_RANK = 0
    MP_RANK = 1
    DP_RANK = 2
    PP_RANK = 1
    RDP_RANK = 2


WORLD = CommGroup.WORLD
MP_GROUP = CommGroup.MP_GROUP
DP_GROUP = CommGroup.DP_GROUP

GROUP_OF_RANK_TYPE = {RankType.WORLD_RANK: CommGroup.WORLD, RankType.MP_RANK: CommGroup.MP_GROUP,
                      RankType.DP_RANK: CommGroup.DP_GROUP}


def group_of(state, group):
    """The state's group (world, mp or dp) for a CommGroup."""
    if not isinstance(group, CommGroup):
        raise TypeError(f"group must be an smp.CommGroup (WORLD, MP_GROUP or DP_GROUP), got {group!r}")
    return {CommGroup.WORLD: state.world, CommGroup.MP_GROUP: state.mp, CommGroup.DP_GROUP: state.dp}[group]


def peer_global_rank(state, peer_rank, rank_type):
    """The global rank of the process that is `peer_rank` in this process's own `rank_type` group."""
    if not isinstance(rank_type, RankType):
        raise TypeError(f"rank_type must be an smp.RankType (WORLD_RANK, MP_RANK or DP_RANK), "
                        f"got {rank_type!r}")
    group_ranks = group_of(state, GROUP_OF_RANK_TYPE[rank_type]).ranks
    if isinstance(peer_rank, bool) or not isinstance(peer_rank, int) or not 0 <= peer_rank < len(group_ranks):
        raise ValueError(f"rank {peer_rank!r} does not exist for {rank_type.name}: "
                         f"valid ranks are 0..{len(group_ranks) - 1}")
    peer = group_ranks[peer_rank]
    if peer == state.rank:
        raise ValueError(f"{rank_type.name} {peer_rank} is this process itself")
    return peer
