"""Ranks and sizes of this process (smp.rank(), smp.mp_rank(), ...)."""

from ..common.ranks import rank_functions
from .state import state

_functions = rank_functions(state)
rank = _functions.rank
size = _functions.size
mp_rank = _functions.mp_rank
mp_size = _functions.mp_size
dp_rank = _functions.dp_rank
dp_size = _functions.dp_size
local_rank = _functions.local_rank
local_size = _functions.local_size
get_mp_group = _functions.get_mp_group
get_dp_group = _functions.get_dp_group
