"""@smp.step: run a function once per microbatch and collect its outputs as StepOutputs."""

import functools

import torch

from ..common import step_context, structure
from . import pipeline
from .state import state
from .step_output import StepOutput


def step(*args, non_split_inputs=None, input_split_axes=None, detach_outputs=True):
    """Decorate a forward/backward function: `@smp.step`, `@smp.step()` or `@smp.step(...)`.

    The parameters may also be given positionally: step(non_split_inputs, input_split_axes).
    """
    func, non_split_inputs, input_split_axes = structure.step_arguments(
        args, non_split_inputs, input_split_axes)
    if func is not None:
        return _StepFunction(func, [], {}, detach_outputs)
    return lambda func: _StepFunction(func, non_split_inputs, input_split_axes, detach_outputs)


class _StepFunction(structure.StepFunctionBase):
    def __init__(self, func, non_split_inputs, input_split_axes, detach_outputs):
        super().__init__(func, non_split_inputs, input_split_axes)
        self._detach = bool(detach_outputs)

    def __call__(self, *args, **kwargs):
        config = state().config
        bound = self._signature.bind(*args, **kwargs)
        with step_context.running(config.microbatches):
            per_mb = self.microbatch_arguments(bound, config.microbatches)
            calls = [functools.partial(self.call, arguments) for arguments in per_mb]
            if config.partitions > 1:
                outputs = pipeline.run_step(calls)
            else:
                outputs = [call() for call in calls]
        return merge_outputs(outputs, self._detach)

    @staticmethod
    def split_leaf(value, num_mb, mb, axis, name):
        if isinstance(value, torch.Tensor):
            return _split_tensor(value, num_mb, mb, axis, name)
        if hasattr(value, "smp_slice"):
            return value.smp_slice(num_mb, mb, axis)
        return value


def _split_tensor(tensor, num_mb, mb, axis, name):
    if tensor.dim() == 0:
        raise ValueError(
            f"argument {name!r} holds a 0-dimensional tensor, which has no batch axis to split; "
            "list it in non_split_inputs"
        )
    if not -tensor.dim() <= axis < tensor.dim():
        raise ValueError(f"argument {name!r}: split axis {axis} does not exist in a tensor of shape "
                         f"{tuple(tensor.shape)}")
    size = tensor.shape[axis]
    if size % num_mb:
        raise ValueError(
            f"argument {name!r}: batch size {size} (axis {axis}) is not divisible by the number of "
            f"microbatches ({num_mb})"
        )
    part = size // num_mb
    return tensor.narrow(axis, mb * part, part)


def merge_outputs(outputs, detach):
    """One output of the same structure, every tensor leaf a StepOutput over the microbatches.

    Any other leaf (a number, a string, a set, ...) becomes the list of its values by microbatch,
    as in SageMaker's library (AWS's example sums the per-microbatch losses and counts an
    evaluation step returns as numbers); None returned by every microbatch stays None.
    """
    def step_output(versions, path):
        return StepOutput([v.detach() if detach else v for v in versions])

    return structure.merge_microbatches(outputs, _is_tensor, step_output, _values_by_microbatch)


def _is_tensor(value):
    return isinstance(value, torch.Tensor)


def _values_by_microbatch(values):
    return None if all(v is None for v in values) else values
