"""SageMaker's v1 names around the common API: the process groups as torch ProcessGroups, the
tensor- and reduced-data-parallel ranks (degree 1 here: tp_rank 0, the RDP group is the DP group),
the model-creation contexts, and the features that are not built (NotImplementedError)."""

import contextlib

import torch

from .state import state
from .unsupported import fail, function


def tp_rank():
    return 0


def tp_size():
    return 1


def rdp_rank():
    return state().dp_rank


def rdp_size():
    return len(state().dp.ranks)


def get_world_process_group():
    return state().world.collective


def get_mp_process_group():
    return state().mp.collective


def get_pp_process_group():
    return state().mp.collective  # with no tensor parallelism the pipeline group is the MP group


def get_dp_process_group():
    return state().dp.collective


def get_rdp_process_group():
    return state().dp.collective


def is_tracing():
    """No tracing step runs here (partitions are decided without one)."""
    return False


@contextlib.contextmanager
def model_creation(tensor_parallelism=False, dtype=None, **tensor_parallel_config):
    """Create the model's parameters in `dtype` (the default dtype otherwise)."""
    if tensor_parallelism:
        fail("smp.model_creation(tensor_parallelism=True)", "tensor parallelism")
    previous = torch.get_default_dtype()
    if dtype is not None:
        torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


@contextlib.contextmanager
def tensor_parallelism(enabled=True, **tensor_parallel_config):
    if enabled:
        fail("smp.tensor_parallelism", "tensor parallelism")
    yield


@contextlib.contextmanager
def delay_param_initialization(enabled=True):
    if enabled:
        fail("smp.delay_param_initialization", "delayed parameter initialization")
    yield


def set_tensor_parallelism(module, enabled=True, **tensor_parallel_config):
    if enabled:
        fail("smp.set_tensor_parallelism", "tensor parallelism")


get_tp_process_group = function("smp.get_tp_process_group", "tensor parallelism")
tp_register = function("smp.tp_register", "tensor parallelism")
tp_register_with_module = function("smp.tp_register_with_module", "tensor parallelism")
set_activation_checkpointing = function("smp.set_activation_checkpointing", "activation checkpointing")
