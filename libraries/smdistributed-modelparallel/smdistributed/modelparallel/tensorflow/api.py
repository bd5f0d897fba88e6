"""Ranks and sizes of this process (smp.rank(), smp.mp_rank(), ...)."""

from ..common.ranks import rank_functions
from .state import state

(rank, size, mp_rank, mp_size, dp_rank, dp_size, local_rank, local_size, get_mp_group,
 get_dp_group) = rank_functions(state)
