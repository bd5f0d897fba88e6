"""Ranks and sizes of this process (smp.rank(), smp.mp_rank(), ...)."""

from ..common.ranks import rank_functions
from .state import state

(rank, size, mp_rank, mp_size, dp_rank, dp_size, local_rank, local_size, get_mp_group,
 get_dp_group) = rank_functions(state)


# SageMaker's aliases: without tensor parallelism, the pipeline-parallel (PP) group is the MP
# group, the reduced-data-parallel (RDP) group the DP group, and each process its own tensor-
# parallel (TP) group.

def pp_rank():
    return mp_rank()


def pp_size():
    return mp_size()


def rdp_rank():
    return dp_rank()


def rdp_size():
    return dp_size()


def tp_rank():
    state()
    return 0


def tp_size():
    state()
    return 1


def get_world_process_group():
    """The torch.distributed ProcessGroup of all processes."""
    return state().world.collective


def get_mp_process_group():
    """The torch.distributed ProcessGroup of this process's MP group."""
    return state().mp.collective


def get_dp_process_group():
    """The torch.distributed ProcessGroup of this process's DP group."""
    return state().dp.collective


get_pp_process_group = get_mp_process_group
get_rdp_process_group = get_dp_process_group
