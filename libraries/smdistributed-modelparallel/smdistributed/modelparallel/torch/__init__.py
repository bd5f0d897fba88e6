"""Sageport's smdistributed.modelparallel.torch: SageMaker's model-parallel common API on
torch.distributed. See the distribution's README.md for what is implemented and how."""

import sys as _sys

from ..common import config as _common_config
from ..common import launch_env as _common_launch_env
from ..common import layout as _common_layout
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
from .state import init, is_initialized
from .step import step
from .step_output import StepOutput

__all__ = [
    "DP_GROUP", "MP_GROUP", "WORLD", "CommGroup", "DistributedModel", "DistributedOptimizer", "RankType",
    "StepOutput", "allgather", "barrier", "broadcast", "dp_barrier", "dp_rank", "dp_size", "get_dp_group",
    "get_mp_group", "init", "is_initialized", "local_rank", "local_size", "mp_barrier", "mp_rank", "mp_size",
    "rank", "recv_from", "send", "size", "step",
]

# config, launch_env and layout moved to smdistributed.modelparallel.common (the TensorFlow
# variant shares them); their old import paths under .torch stay valid for scripts and tests.
for _module in (_common_config, _common_launch_env, _common_layout):
    _sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module
