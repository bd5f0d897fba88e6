"""@smp.step: a tf.function that runs its Python function once per microbatch and returns the
outputs as StepOutputs.

The tf.function is made over a wrapper with the decorated function's own signature (so an
input_signature and every other tf.function argument apply to the user's parameters); inside the
trace the arguments are split and the function runs once per microbatch; the tf.function
returns every microbatch's outputs, which become StepOutputs outside it. smp.step functions may
be called eagerly or from another tf.function (the usual train_step).
"""

import functools

import keras
import tensorflow as tf

from ..common import step_context, structure
from .state import state
from .step_output import StepOutput

_post_partition_hooks = []  # registered, not yet run


def register_post_partition_hook(hook):
    """Run `hook()` once, eagerly, after the model is partitioned and before the first forward
    pass: here, when the next smp.step function is first called (the model is never partitioned).
    Usable as a decorator; returns the hook."""
    if not callable(hook):
        raise TypeError(f"register_post_partition_hook needs a callable, got {hook!r}")
    _post_partition_hooks.append(hook)
    return hook


def _run_post_partition_hooks():
    with tf.init_scope():  # eagerly, also when the step is first called inside a tf.function
        while _post_partition_hooks:
            _post_partition_hooks.pop(0)()


def step(*args, non_split_inputs=None, input_split_axes=None, **function_kwargs):
    """Decorate a forward/backward function: `@smp.step`, `@smp.step()` or `@smp.step(...)`.

    non_split_inputs and input_split_axes may also be given positionally; any other keyword
    (input_signature, reduce_retracing, ...) is tf.function's.
    """
    func, non_split_inputs, input_split_axes = structure.step_arguments(
        args, non_split_inputs, input_split_axes)
    if func is not None:  # @smp.step, or smp.step(func, input_signature=...) as tf.function(func, ...)
        return _StepFunction(func, [], {}, function_kwargs)
    return lambda func: _StepFunction(func, non_split_inputs, input_split_axes, function_kwargs)


class _StepFunction(structure.StepFunctionBase):
    def __init__(self, func, non_split_inputs, input_split_axes, function_kwargs):
        super().__init__(func, non_split_inputs, input_split_axes)

        @functools.wraps(func)
        def microbatched(*args, **kwargs):
            return self._run_microbatches(*args, **kwargs)

        self._function = tf.function(microbatched, **function_kwargs)

    def __call__(self, *args, **kwargs):
        state()  # smp.init() first
        _run_post_partition_hooks()
        per_microbatch = self._function(*args, **kwargs)
        return structure.merge_microbatches(per_microbatch, tf.is_tensor, self._step_output, _last_value)

    def _step_output(self, versions, path):
        return StepOutput(versions, key=(id(self), path))

    def _run_microbatches(self, *args, **kwargs):
        """The trace: every microbatch's arguments first (a bad input fails before any work), then
        the function once per microbatch; the list of their outputs."""
        num_mb = state().config.microbatches
        bound = self._signature.bind(*args, **kwargs)
        with step_context.running(num_mb):
            per_mb = self.microbatch_arguments(bound, num_mb)
            outputs = [structure.map_leaves(self.call(arguments), _as_tensor) for arguments in per_mb]
        return outputs

    @staticmethod
    def split_leaf(value, num_mb, mb, axis, name):
        if hasattr(value, "smp_slice"):
            return value.smp_slice(num_mb, mb, axis)
        if tf.is_tensor(value):
            return _split_tensor(value, num_mb, mb, axis, name)
        return value


def _last_value(values):
    """A leaf that is not a tensor: its value in the last microbatch."""
    return values[-1]


def _split_tensor(tensor, num_mb, mb, axis, name):
    rank = tensor.shape.rank
    if rank == 0:
        raise ValueError(f"argument {name!r} holds a 0-dimensional tensor, which has no batch axis to split; "
                         "list it in non_split_inputs")
    if rank is not None and not -rank <= axis < rank:
        raise ValueError(f"argument {name!r}: split axis {axis} does not exist in a tensor of shape "
                         f"{tensor.shape}")
    size = tensor.shape[axis] if rank is not None else None
    if size is not None and size % num_mb:
        raise ValueError(f"argument {name!r}: batch size {size} (axis {axis}) is not divisible by the number "
                         f"of microbatches ({num_mb})")
    # A size unknown when tracing is checked by tf.split when the step runs.
    return tf.split(tensor, num_mb, axis=axis)[mb]


def _as_tensor(value):
    """A returned variable as its value (SageMaker wraps tf.Variables in StepOutputs too)."""
    if isinstance(value, (tf.Variable, keras.Variable)):
        return tf.convert_to_tensor(value)
    return value
