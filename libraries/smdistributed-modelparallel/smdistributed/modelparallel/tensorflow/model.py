"""DistributedModel: a Keras model whose replicas train data-parallel over the DP group.

- Same start: every variable the model creates takes global rank 0's initial value (a variable
  creator wraps each initial value in a broadcast from rank 0; every rank creates the model's
  variables in the same order, so the broadcasts pair up), and a variable made before the first
  call (in __init__) is overwritten by rank 0's value then.
- Averaged gradients: the model runs with each trainable variable's value passed through an
  identity whose gradient is the mean of that gradient over the DP group (Keras's StatelessScope
  substitutes the values; its updates to non-trainable variables, such as batch-norm
  statistics, are assigned back). Whatever computes the gradients inside smp.step
  (tf.GradientTape, tf.gradients) gets the DP average, per microbatch; the mean over the
  microbatches (StepOutput.accumulate / reduce_mean) is then the global batch's gradient.

The all-reduces run inside the step's graph as numpy functions over the job's transport; they
are stateful, so TensorFlow runs them in the order they were created, which is the same on
every rank of a DP group.
"""

import keras
import numpy as np
import tensorflow as tf

from ..common import step_context
from .comm import DP_GROUP, WORLD, allgather, allreduce_mean, barrier
from .state import state


class DistributedModel(keras.Model):
    """Subclass it and implement call(), as with Keras's model sub-classing API; call the model
    inside an smp.step function only."""

    _exporting = False  # save_model() traces the plain Keras model: no step, no all-reduce

    def __call__(self, *args, **kwargs):
        if self._exporting:
            return super().__call__(*args, **kwargs)
        if step_context.current() is None:
            raise RuntimeError("a smp.DistributedModel can only be called inside an smp.step function")
        if not self.built:
            self._build_from_rank_0(*args, **kwargs)
        values = [(v, _dp_mean_gradient(v.value)) for v in self.trainable_variables]
        values += [(v, v.value) for v in self.non_trainable_variables]
        with keras.StatelessScope(state_mapping=values) as scope:
            outputs = super().__call__(*args, **kwargs)
        for variable in self.non_trainable_variables:
            variable.assign(scope.get_current_value(variable))
        return outputs

    def _build_from_rank_0(self, *args, **kwargs):
        """Create the variables (a call whose outputs and updates are dropped) with rank 0's
        initial values; variables that existed before take rank 0's values too."""
        existing = list(self.variables)
        with tf.init_scope():  # eagerly: they exist and hold their values already
            for variable in existing:
                variable.assign(_from_rank_0(variable.numpy()))
        with tf.variable_creator_scope(_rank_0_initial_value), keras.StatelessScope():
            super().__call__(*args, **kwargs)

    def save_model(self, save_path="/opt/ml/model"):
        """The whole model with its current weights as a TensorFlow SavedModel (Keras's export,
        endpoint `serve`) in `save_path`: every rank holds all of it, so global rank 0 writes it
        and the others wait until it is written."""
        if not self.built:
            raise RuntimeError("save_model() needs the model built: call it in an smp.step function first")
        if state().rank == 0:
            self._exporting = True
            try:
                self.export(save_path, format="tf_saved_model", verbose=False)
            finally:
                self._exporting = False
        barrier(WORLD)


def _rank_0_initial_value(next_creator, **kwargs):
    initial = kwargs["initial_value"]
    if callable(initial):
        kwargs["initial_value"] = lambda: _broadcast_from_rank_0(tf.convert_to_tensor(initial()))
    else:
        kwargs["initial_value"] = _broadcast_from_rank_0(tf.convert_to_tensor(initial))
    return next_creator(**kwargs)


def _broadcast_from_rank_0(tensor):
    return tf.numpy_function(_from_rank_0, [tensor], tensor.dtype, stateful=True)


def _from_rank_0(array):
    return np.asarray(allgather(array if state().rank == 0 else None, WORLD)[0], dtype=array.dtype)


@tf.custom_gradient
def _dp_mean_gradient(value):
    def gradient(upstream):
        if len(state().dp.ranks) == 1:
            return upstream
        mean = tf.numpy_function(_dp_mean, [upstream], upstream.dtype, stateful=True)
        return tf.ensure_shape(mean, upstream.shape)

    return tf.identity(value), gradient


def _dp_mean(array):
    return np.asarray(allreduce_mean(array, DP_GROUP), dtype=array.dtype)
