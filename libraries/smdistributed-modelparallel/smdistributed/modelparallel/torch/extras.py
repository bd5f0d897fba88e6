"""SageMaker's v1 names around the common API (the rank and process-group aliases are in api.py):
the model-creation contexts, and the features that are not built (NotImplementedError)."""

import contextlib

import torch

from .unsupported import fail, function


def is_tracing():
    """The user's step function never runs in a tracing pass here: the partition is planned from
    torch.fx graphs and one measuring forward pass of the modules themselves (model.py)."""
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
