"""Sageport's smdistributed.modelparallel.torch: SageMaker's model-parallel common API on
torch.distributed. See the distribution's README.md for what is implemented and how."""

from .api import (
    dp_rank,
    dp_size,
    get_dp_group,
    get_dp_process_group,
    get_mp_group,
    get_mp_process_group,
    get_pp_process_group,
    get_rdp_process_group,
    get_world_process_group,
    local_rank,
    local_size,
    mp_rank,
    mp_size,
    pp_rank,
    pp_size,
    rank,
    rdp_rank,
    rdp_size,
    size,
    tp_rank,
    tp_size,
)
from .comm import (
    DP_GROUP,
    MP_GROUP,
    WORLD,
    CommGroup,
    RankType,
    allgather,
    barrier,
    broadcast,
    dp_barrier,
    mp_barrier,
    recv_from,
    send,
)
from .model import DistributedModel, DistributedOptimizer
from .partition import partition, set_partition
from .state import init, is_initialized
from .step import step
from .step_output import StepOutput

__all__ = [
    "DP_GROUP", "MP_GROUP", "WORLD", "CommGroup", "DistributedModel", "DistributedOptimizer", "RankType",
    "StepOutput", "allgather", "barrier", "broadcast", "dp_barrier", "dp_rank", "dp_size", "get_dp_group",
    "get_mp_group", "init", "is_initialized", "local_rank", "local_size", "mp_barrier", "mp_rank", "mp_size",
    "rank", "recv_from", "send", "size", "step",
    "get_dp_process_group", "get_mp_process_group", "get_pp_process_group", "get_rdp_process_group",
    "get_world_process_group", "partition", "pp_rank", "pp_size", "rdp_rank", "rdp_size", "set_partition",
    "tp_rank", "tp_size",
]
