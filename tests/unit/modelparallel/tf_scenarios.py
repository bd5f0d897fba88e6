"""What the ranks of a TensorFlow test World run (world.serve imports this module in the ranks
only). Each scenario runs on every rank at once and returns plain picklable data per rank
(no TensorFlow objects), so that the test process never imports TensorFlow."""

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported: no banner per rank

import keras  # noqa: E402
import numpy as np  # noqa: E402
import smdistributed.modelparallel.tensorflow as smp  # noqa: E402
import tensorflow as tf  # noqa: E402

from . import shared_scenarios  # noqa: E402
from .shared_scenarios import RECEIVER_DELAY  # noqa: E402

BATCH, FEATURES, HIDDEN, STEPS, LEARNING_RATE = 16, 4, 8, 5, 0.1


def start(launcher, parameters):
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    smp.init(parameters if launcher == "none" else None)


@dataclass
class Payload:
    """A class of the user's own, as a script would send."""

    sender: int
    values: dict


def describe(obj):
    """What the test process compares: a payload as plain data."""
    if isinstance(obj, Payload):
        return {"sender": obj.sender, "values": obj.values}
    return obj


def payload_from(rank):
    return Payload(rank, {"nested": [rank, (rank,)], "array": np.arange(3) + rank})


# ---- ranks, groups and the communication primitives ----

layout = functools.partial(shared_scenarios.layout, smp)


def allgather():
    rank = smp.rank()
    return {
        "world": [describe(p) for p in smp.allgather(payload_from(rank), smp.WORLD)],
        "mp": smp.allgather({"rank": rank}, smp.CommGroup.MP_GROUP),
        "dp": [int(t) for t in smp.allgather(tf.constant(rank).numpy(), smp.DP_GROUP)],
    }


def send_and_receive(rank_type_name):
    """Member 0 of this rank's group sends to the last member, then the last sends back."""
    rank_type = smp.RankType[rank_type_name]
    group = {"WORLD_RANK": list(range(smp.size())), "MP_RANK": smp.get_mp_group(),
             "DP_RANK": smp.get_dp_group()}[rank_type_name]
    own, last = group.index(smp.rank()), len(group) - 1
    if own == 0:
        smp.send(payload_from(smp.rank()), last, rank_type)
        return describe(smp.recv_from(last, rank_type))
    if own == last:
        received = describe(smp.recv_from(0, rank_type))
        smp.send({"reply from": smp.rank()}, 0, rank_type)
        return received
    return None


def broadcast(group_name):
    """Member 0 of the group broadcasts; every other member receives it with recv_from."""
    rank_type = {"WORLD": smp.RankType.WORLD_RANK, "MP_GROUP": smp.RankType.MP_RANK,
                 "DP_GROUP": smp.RankType.DP_RANK}[group_name]
    members = shared_scenarios.group_members(smp, group_name)
    if members[0] == smp.rank():
        smp.broadcast(payload_from(smp.rank()), smp.CommGroup[group_name])
        return None
    return describe(smp.recv_from(0, rank_type))


send_waits_for_receiver = functools.partial(shared_scenarios.send_waits_for_receiver, smp)


def barrier_waits(group_name, marker_dir):
    """The last member of the group arrives late, leaving a marker; the others must see it after
    the barrier."""
    members = shared_scenarios.group_members(smp, group_name)
    marker = Path(marker_dir) / f"{group_name}-{members[-1]}"
    if smp.rank() == members[-1]:
        time.sleep(RECEIVER_DELAY)
        marker.touch()
    smp.barrier(smp.CommGroup[group_name])
    return marker.exists()


def wrong_ranks_and_groups():
    errors = {}
    for name, call in {
        "self": lambda: smp.send(1, smp.mp_rank(), smp.RankType.MP_RANK),
        "outside": lambda: smp.send(1, smp.size(), smp.RankType.WORLD_RANK),
        "rank type": lambda: smp.recv_from(0, smp.CommGroup.WORLD),
        "group": lambda: smp.allgather(1, smp.RankType.WORLD_RANK),
    }.items():
        try:
            call()
            errors[name] = None
        except (ValueError, TypeError) as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"
    return errors


# ---- smp.step and StepOutput ----

class Window:
    """An argument type of the user's own, split through smp_slice."""

    def __init__(self, tensor):
        self.tensor = tensor

    def smp_slice(self, num_mb, mb, axis):
        return Window(tf.split(self.tensor, num_mb, axis=axis)[mb])


def step_splits_arguments():
    """Every microbatch's view of the arguments, as the step function saw them."""

    @smp.step(non_split_inputs=["scale"], input_split_axes={"columns": 1})
    def record(rows, columns, scale, nested, window):
        return {"rows": rows, "columns": columns, "scale": scale * tf.ones(()),
                "nested": [nested["a"], nested["b"][0]], "window": window.tensor}

    rows = tf.reshape(tf.range(8.0), (4, 2))
    out = record(rows, tf.reshape(tf.range(8.0), (2, 4)), tf.constant(3.0),
                 {"a": tf.range(4.0), "b": [tf.range(4.0) * 10]}, Window(tf.range(4.0) + 100))
    return _numpy({k: [o.outputs for o in v] if isinstance(v, list) else v.outputs for k, v in out.items()})


def step_output_reductions(num_mb):
    """Every reduction of one StepOutput, in the step's caller inside a tf.function (as AWS's
    scripts use them) and eagerly."""

    @smp.step
    def compute(x):
        return x * 2.0

    given = tf.Variable(tf.zeros((2, 3)))

    @tf.function
    def reduce_in_graph(x):
        out = compute(x)
        return {"reduce_mean": out.reduce_mean(), "reduce_sum": out.reduce_sum(), "concat": out.concat(),
                "merge": out.merge(), "stack": out.stack(), "accumulate": out.accumulate(),
                "accumulate add_n": out.accumulate("add_n"), "accumulate_n": out.accumulate("accumulate_n"),
                "accumulate var": out.accumulate(var=given)}

    x = tf.reshape(tf.range(2.0 * 3 * num_mb), (2 * num_mb, 3))
    in_graph = reduce_in_graph(x)
    again = reduce_in_graph(x + 1.0)  # the internal accumulator starts anew each call
    eager = compute(x)
    return _numpy({"graph": in_graph, "again": again["accumulate"], "eager mean": eager.reduce_mean(),
                   "eager merge": eager.merge(), "given": given, "outputs": eager.outputs})


def step_errors(num_mb):
    errors = {}

    @smp.step
    def identity(x):
        return x

    @smp.step
    def outer(x):
        return identity(x)

    def unknown_name():
        smp.step(non_split_inputs=["nope"])(lambda x: x)

    for name, call in {
        "indivisible": lambda: identity(tf.zeros((num_mb + 1, 2))),
        "scalar": lambda: identity(tf.constant(1.0)),
        "axis": lambda: smp.step(input_split_axes={"x": 3})(lambda x: x)(tf.zeros((4, 4))),
        "nested": lambda: outer(tf.zeros((num_mb, 2))),
        "unknown name": unknown_name,
        "model outside step": lambda: TwoLayers(seed=1)(tf.zeros((2, FEATURES), tf.float64)),
        "accumulate method": lambda: identity(tf.zeros((num_mb, 2))).accumulate("mean"),
        "partition": lambda: smp.partition(1),
    }.items():
        try:
            call()
            errors[name] = None
        except (ValueError, TypeError, RuntimeError, NotImplementedError) as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"
    return errors


def checkpoint_roundtrip(directory):
    """AWS's usage: tf.train.Checkpoint(optimizer=..., model=...) in smp.CheckpointManager, save
    after steps, restore the latest and a named one."""
    model = TwoLayers(seed=1)
    optimizer = keras.optimizers.SGD(LEARNING_RATE, momentum=0.9)
    inputs, targets = make_problem()

    @smp.step
    def get_grads(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        return tape.gradient(loss, model.trainable_variables)

    def train_step():
        gradients = [g.accumulate() for g in get_grads(inputs, targets)]
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return [v.numpy() for v in model.trainable_variables]

    manager = smp.CheckpointManager(tf.train.Checkpoint(optimizer=optimizer, model=model), directory,
                                    max_to_keep=None)
    after_first = train_step()
    first_path = manager.save()
    after_second = train_step()
    manager.save()
    train_step()
    manager.restore()
    latest = [v.numpy() for v in model.trainable_variables]
    manager.restore(restore_prefix="ckpt-1")
    named = [v.numpy() for v in model.trainable_variables]
    return {"first path": first_path, "files": sorted(os.listdir(directory)),
            "latest restored": all(np.array_equal(a, b) for a, b in zip(latest, after_second, strict=True)),
            "named restored": all(np.array_equal(a, b) for a, b in zip(named, after_first, strict=True)),
            "moved on": not all(np.array_equal(a, b) for a, b in zip(after_first, after_second, strict=True))}


def post_partition_hook():
    """A hook registered as AWS's example does runs once, eagerly, before the first forward pass
    of the next smp.step function, also when that step is first called from a tf.function."""
    seen = []

    @smp.register_post_partition_hook
    def hook():
        seen.append(("hook", tf.executing_eagerly()))

    @smp.step
    def forward(x):
        seen.append(("forward", tf.executing_eagerly()))
        return x

    @tf.function
    def train_step(x):
        return forward(x).reduce_mean()

    train_step(tf.zeros((8, 1)))
    train_step(tf.ones((8, 1)))
    return seen


# ---- data-parallel training ----

class TwoLayersMixin:
    """A tanh hidden layer and a linear output, in float64; seed: the initializers' seed."""

    def __init__(self, seed):
        super().__init__()
        self.hidden = _dense(HIDDEN, seed, activation="tanh")
        self.out = _dense(1, seed + 100)

    def call(self, x):
        return self.out(self.hidden(x))


class TwoLayers(TwoLayersMixin, smp.DistributedModel):
    """Ranks pass different seeds, and must all start from rank 0's weights."""


class ReferenceTwoLayers(TwoLayersMixin, keras.Model):
    """The same model as a plain Keras model, trained by one process on the global batch."""


def _dense(units, seed, activation=None):
    return keras.layers.Dense(units, activation=activation, dtype="float64",
                              kernel_initializer=keras.initializers.GlorotUniform(seed=seed),
                              bias_initializer=keras.initializers.RandomNormal(seed=seed + 1))


def make_problem():
    rng = np.random.default_rng(7)
    inputs = rng.normal(size=(BATCH, FEATURES))
    targets = inputs @ rng.normal(size=(FEATURES, 1)) + 0.1
    return inputs, targets


def reference_training():
    """One process, the whole global batch, plain Keras and tf.GradientTape."""
    model = ReferenceTwoLayers(seed=1)
    optimizer = keras.optimizers.SGD(LEARNING_RATE)
    inputs, targets = make_problem()

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables, strict=True))
        return loss

    losses = [float(train_step(inputs, targets)) for _ in range(STEPS)]
    return losses, [v.numpy() for v in model.trainable_variables]


def distributed_training(save_dir):
    """The seed's pattern: gradients from smp.step, accumulated, applied in a tf.function; each
    DP rank reads its own shard of the global batch (the MP ranks of a replica read the same)."""
    model = TwoLayers(seed=1 + smp.rank())
    optimizer = keras.optimizers.SGD(LEARNING_RATE)
    inputs, targets = make_problem()
    shard = BATCH // smp.dp_size()
    x = inputs[smp.dp_rank() * shard:(smp.dp_rank() + 1) * shard]
    y = targets[smp.dp_rank() * shard:(smp.dp_rank() + 1) * shard]

    @smp.step
    def get_grads(x, y):
        with tf.GradientTape() as tape:
            predictions = model(x)
            loss = tf.reduce_mean((predictions - y) ** 2)
        return tape.gradient(loss, model.trainable_variables), loss, predictions

    @tf.function
    def train_step(x, y):
        gradients, loss, predictions = get_grads(x, y)
        gradients = [g.accumulate() for g in gradients]
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss.reduce_mean(), predictions.merge()

    losses = []
    for _ in range(STEPS):
        loss, predictions = train_step(x, y)
        assert predictions.shape == (shard, 1)
        losses.append(float(np.mean(smp.allgather(float(loss), smp.DP_GROUP))))  # the global batch's
    expected_losses, expected_parameters = reference_training()
    model.save_model(save_dir)  # rank 0 writes, every rank reads it back
    batch = tf.constant(inputs, tf.float32)  # Keras's export serves the model's input dtype, float32
    loaded = tf.saved_model.load(save_dir)  # held: its functions need its variables alive
    served = loaded.serve(batch).numpy()
    direct = model.call(batch).numpy()
    return {"losses": losses, "parameters": [v.numpy() for v in model.trainable_variables],
            "expected losses": expected_losses, "expected parameters": expected_parameters,
            "saved model error": float(np.max(np.abs(served - direct)))}


def _numpy(value):
    return tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, value)
