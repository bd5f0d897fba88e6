"""@smp.step: run a function once per microbatch and collect its outputs as StepOutputs."""

import functools
import inspect

import torch

from . import pipeline, step_context
from .state import state
from .step_output import StepOutput


def step(*args, non_split_inputs=None, input_split_axes=None, detach_outputs=True):
    """Decorate a forward/backward function: `@smp.step`, `@smp.step()` or `@smp.step(...)`.

    The parameters may also be given positionally: step(non_split_inputs, input_split_axes).
    """
    if len(args) == 1 and callable(args[0]) and non_split_inputs is None and input_split_axes is None:
        return _StepFunction(args[0], [], {}, detach_outputs)
    if len(args) > 2:
        raise TypeError("smp.step takes at most two positional arguments: non_split_inputs, input_split_axes")
    if args:
        non_split_inputs = args[0]
    if len(args) == 2:
        input_split_axes = args[1]
    return lambda func: _StepFunction(func, non_split_inputs or [], input_split_axes or {}, detach_outputs)


class _StepFunction:
    def __init__(self, func, non_split_inputs, input_split_axes, detach_outputs):
        self._signature = inspect.signature(func)
        _check_names(self._signature, "non_split_inputs", non_split_inputs)
        _check_names(self._signature, "input_split_axes", input_split_axes)
        if any(isinstance(a, bool) or not isinstance(a, int) for a in input_split_axes.values()):
            raise TypeError(f"input_split_axes values must be integer axes, got {input_split_axes!r}")
        self._func = func
        self._non_split = set(non_split_inputs)
        self._axes = dict(input_split_axes)
        self._detach = bool(detach_outputs)
        functools.update_wrapper(self, func)

    def __get__(self, instance, owner=None):
        """A decorated method receives its instance first, passed to every microbatch unsplit
        (unless the instance is itself a tensor, container or smp_slice object)."""
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        config = state().config
        bound = self._signature.bind(*args, **kwargs)
        with step_context.running(config.microbatches):
            # every microbatch's arguments first, so that a bad input fails before any work
            per_mb = [{} for _ in range(config.microbatches)]
            for name, value in bound.arguments.items():
                for mb, part in enumerate(self._slices(name, value, config.microbatches)):
                    per_mb[mb][name] = part
            calls = [functools.partial(self._call, arguments) for arguments in per_mb]
            if config.partitions > 1:
                outputs = pipeline.run_step(calls)
            else:
                outputs = [call() for call in calls]
        return merge_outputs(outputs, self._detach)

    def _call(self, arguments):
        call = inspect.BoundArguments(self._signature, arguments)
        return self._func(*call.args, **call.kwargs)

    def _slices(self, name, value, num_mb):
        if name in self._non_split:
            return [value] * num_mb
        axis = self._axes.get(name, 0)
        return [split(value, num_mb, mb, axis, name) for mb in range(num_mb)]


def split(value, num_mb, mb, axis, name):
    """Microbatch `mb` of `num_mb` of an argument value."""
    if isinstance(value, torch.Tensor):
        return _split_tensor(value, num_mb, mb, axis, name)
    if hasattr(value, "smp_slice"):
        return value.smp_slice(num_mb, mb, axis)
    if isinstance(value, dict):
        return type(value)((k, split(v, num_mb, mb, axis, name)) for k, v in value.items())
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(split(v, num_mb, mb, axis, name) for v in value))
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(split(v, num_mb, mb, axis, name) for v in value)
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
    first = outputs[0]
    if isinstance(first, torch.Tensor):
        _check_all(outputs, torch.Tensor)
        return StepOutput([o.detach() if detach else o for o in outputs])
    if isinstance(first, dict):
        _check_all(outputs, dict)
        if any(o.keys() != first.keys() for o in outputs):
            raise ValueError("the smp.step function returned dicts with different keys in different "
                             "microbatches")
        return type(first)((k, merge_outputs([o[k] for o in outputs], detach)) for k in first)
    if isinstance(first, (list, tuple)):
        _check_all(outputs, (list, tuple))
        if any(len(o) != len(first) for o in outputs):
            raise ValueError("the smp.step function returned sequences of different lengths in different "
                             "microbatches")
        items = [merge_outputs(list(column), detach) for column in zip(*outputs, strict=True)]
        return type(first)(*items) if hasattr(first, "_fields") else type(first)(items)
    if all(o is None for o in outputs):
        return None
    return list(outputs)


def _check_all(outputs, kind):
    if not all(isinstance(o, kind) for o in outputs):
        raise ValueError("the smp.step function returned outputs of different types in different "
                         "microbatches")


def _check_names(signature, what, names):
    unknown = [n for n in names if n not in signature.parameters]
    if unknown:
        raise ValueError(f"{what} names {unknown}, which are not parameters of the smp.step function "
                         f"{list(signature.parameters)}")
