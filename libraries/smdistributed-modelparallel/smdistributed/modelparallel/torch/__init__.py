"""Sageport's smdistributed.modelparallel.torch: SageMaker's model-parallel common API on
torch.distributed. See the distribution's README.md for what is implemented and how."""

import sys as _sys

from ..common import config as _common_config
from ..common import launch_env as _common_launch_env
from ..common import layout as _common_layout
from . import amp, nn, optimizers, patches
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
from .checkpoint import load, save
from .checkpoint_folders import resume_from_checkpoint, save_checkpoint
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
from .extras import (
    delay_param_initialization,
    get_tp_process_group,
    is_tracing,
    model_creation,
    set_activation_checkpointing,
    set_tensor_parallelism,
    tensor_parallelism,
    tp_register,
    tp_register_with_module,
)
from .model import DistributedModel
from .optimizer import DistributedOptimizer
from .partition import partition, set_partition
from .state import init, is_initialized
from .step import step
from .step_output import StepOutput

__all__ = [
    "DP_GROUP", "MP_GROUP", "WORLD", "CommGroup", "DistributedModel", "DistributedOptimizer",
    "RankType", "StepOutput", "allgather", "amp", "barrier", "broadcast",
    "delay_param_initialization", "dp_barrier", "dp_rank", "dp_size", "get_dp_group",
    "get_dp_process_group", "get_mp_group", "get_mp_process_group", "get_pp_process_group",
    "get_rdp_process_group", "get_tp_process_group", "get_world_process_group", "init",
    "is_initialized", "is_tracing", "load", "local_rank", "local_size", "model_creation",
    "mp_barrier", "mp_rank", "mp_size", "nn", "optimizers", "partition", "patches", "pp_rank", "pp_size",
    "rank", "rdp_rank", "rdp_size", "recv_from", "resume_from_checkpoint", "save", "save_checkpoint", "send",
    "set_activation_checkpointing", "set_partition", "set_tensor_parallelism", "size", "step",
    "tensor_parallelism", "tp_rank", "tp_register", "tp_register_with_module", "tp_size",
]

# config, launch_env and layout moved to smdistributed.modelparallel.common (the TensorFlow
# variant shares them); their old import paths under .torch stay valid for scripts and tests.
for _module in (_common_config, _common_launch_env, _common_layout):
    _sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module
