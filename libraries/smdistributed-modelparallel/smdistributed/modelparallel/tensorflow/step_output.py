"""StepOutput: a tensor's versions over the microbatches of one smp.step call, with the
TensorFlow-only merge() and accumulate()."""

import tensorflow as tf

from ..common.step_output import StepOutputBase

ACCUMULATE_METHODS = ("variable", "add_n", "accumulate_n")
_accumulators = {}  # (StepOutput key, shape, dtype) -> the internal tf.Variable of accumulate()


class StepOutput(StepOutputBase):
    def __init__(self, outputs, key=None):
        """`key` names the output (its smp.step function and place in the returned structure), so
        that accumulate() reuses one internal variable across calls and traces."""
        super().__init__(outputs)
        self._key = key

    def reduce_sum(self):
        return tf.add_n(self._outputs)

    def concat(self):
        """The tensors concatenated along the batch dimension (0)."""
        return tf.concat(self._outputs, axis=0)

    def merge(self):
        """As concat(): the microbatches' tensors (model predictions, typically) put back together
        along the batch dimension (0)."""
        return self.concat()

    def stack(self):
        return tf.stack(self._outputs)

    def accumulate(self, method="variable", var=None):
        """The same value as reduce_mean(), summed as `method` says: "add_n" and "accumulate_n"
        with tf.add_n (tf.math.accumulate_n is tf.add_n in TensorFlow 2), "variable" by adding
        every microbatch's tensor to `var` in turn, or to a variable of the library's when `var`
        is None (with tf.add_n when the tensors' shape is not static). `var` is overwritten."""
        if method not in ACCUMULATE_METHODS:
            raise ValueError(f"accumulate method must be one of {ACCUMULATE_METHODS}, got {method!r}")
        first = tf.convert_to_tensor(self._outputs[0])
        if method != "variable" or (var is None and not first.shape.is_fully_defined()):
            return self.reduce_mean()  # an internal variable needs a static shape
        var = self._accumulator(first) if var is None else var
        if not var.shape.is_compatible_with(first.shape) or var.dtype != first.dtype:
            raise ValueError(f"accumulate(var=...) needs a variable of shape {first.shape} and dtype "
                             f"{first.dtype.name}, got {var.shape} {var.dtype.name}")
        var.assign(first)
        for output in self._outputs[1:]:
            var.assign_add(output)
        return var.read_value() / len(self._outputs)

    def _accumulator(self, like):
        key = (self._key, tuple(like.shape.as_list()), like.dtype.name)
        if self._key is None or key not in _accumulators:
            with tf.init_scope():  # created eagerly, so also when the first call is in a trace
                _accumulators[key] = tf.Variable(tf.zeros(like.shape, like.dtype), trainable=False,
                                                 name="smp_accumulator")
        return _accumulators[key]
