"""Sageport's smdistributed.modelparallel.tensorflow: SageMaker's model-parallel common API for
TensorFlow 2 and Keras 3, data parallel across processes. See the distribution's README.md for
what is implemented and how."""

from .api import (
    dp_rank,
    dp_size,
    get_dp_group,
    get_mp_group,
    local_rank,
    local_size,
    mp_rank,
    mp_size,
    rank,
    size,
)
from .checkpoint import CheckpointManager
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
from .model import DistributedModel
from .state import init, is_initialized
from .step import register_post_partition_hook, step
from .step_output import StepOutput
from .unsupported import partition

__all__ = [
    "DP_GROUP", "MP_GROUP", "WORLD", "CheckpointManager", "CommGroup", "DistributedModel", "RankType",
    "StepOutput", "allgather", "barrier", "broadcast", "dp_barrier", "dp_rank", "dp_size", "get_dp_group",
    "get_mp_group", "init", "is_initialized", "local_rank", "local_size", "mp_barrier", "mp_rank", "mp_size",
    "partition", "rank", "recv_from", "register_post_partition_hook", "send", "size", "step",
]
