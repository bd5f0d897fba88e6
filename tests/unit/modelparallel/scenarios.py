"""What the ranks of a test World run. Each scenario runs on every rank of the world at once and
returns a picklable value per rank; assertions that need the rank's own view are made here."""

import functools
import importlib
import time
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path

import pytest
import smdistributed.modelparallel.torch as smp
import torch

from . import pipeline_scenarios, shared_scenarios
from .shared_scenarios import RECEIVER_DELAY
from .training import train_on_dp_shard


def start(launcher, parameters):
    """In a rank world.serve started: parameters go to smp.init() only without a launcher."""
    torch.set_num_threads(1)
    smp.init(parameters if launcher == "none" else None)


def scenario(name):
    """The scenario world.serve runs for `name`: a function of this module or of
    pipeline_scenarios, or `module.function` of another module of this package."""
    module, _, function = name.rpartition(".")
    if not module:
        return globals().get(name) or getattr(pipeline_scenarios, name)
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)


@dataclass(eq=False)
class Payload:
    """A custom picklable class, as user code would send."""

    name: str
    values: dict
    tensor: torch.Tensor

    def __eq__(self, other):
        return (isinstance(other, Payload) and (self.name, self.values) == (other.name, other.values)
                and torch.equal(self.tensor, other.tensor))


def payload_from(rank):
    return Payload(f"from {rank}", {"rank": rank, "nested": [rank, (rank,)]}, torch.arange(3) + rank)


# ---- ranks, groups and the communication primitives ----

layout = functools.partial(shared_scenarios.layout, smp)


def allgather():
    rank = smp.rank()
    return {
        "world": smp.allgather(payload_from(rank), smp.WORLD),
        "mp": smp.allgather({"rank": rank}, smp.CommGroup.MP_GROUP),
        "dp": smp.allgather(torch.tensor([rank]), smp.DP_GROUP),
    }


def send_and_receive(rank_type_name):
    """The member 0 of this rank's group sends to the last member, then the last sends back."""
    rank_type = smp.RankType[rank_type_name]
    own, last = _own_rank(rank_type), _group_size(rank_type) - 1
    received = []
    if own == 0:
        smp.send(payload_from(smp.rank()), last, rank_type)
        received.append(smp.recv_from(last, rank_type))
    elif own == last:
        received.append(smp.recv_from(0, rank_type))
        smp.send({"reply from": smp.rank(), "tensor": torch.ones(2)}, 0, rank_type)
    return received


def broadcast(group_name):
    """Member 0 of the group broadcasts; every other member receives it with recv_from."""
    group = smp.CommGroup[group_name]
    rank_type = {"WORLD": smp.RankType.WORLD_RANK, "MP_GROUP": smp.RankType.MP_RANK,
                 "DP_GROUP": smp.RankType.DP_RANK}[group_name]
    if _own_rank(rank_type) == 0:
        smp.broadcast(payload_from(smp.rank()), group)
        return None
    return smp.recv_from(0, rank_type)


send_waits_for_receiver = functools.partial(shared_scenarios.send_waits_for_receiver, smp)


class SlowToUnpickle:
    """Writes a marker when the receiver has finished unpickling it (after a pause)."""

    def __init__(self, marker):
        self.marker = marker

    def __setstate__(self, state):
        self.__dict__.update(state)
        time.sleep(RECEIVER_DELAY)
        Path(self.marker).touch()


def send_waits_until_the_object_is_received(marker_dir):
    """The sender returns only after the receiver unpickled the object, not when it posted its receive."""
    marker = Path(marker_dir) / "receiver-unpickled"
    if smp.rank() == 0:
        smp.send(SlowToUnpickle(str(marker)), 1, smp.RankType.WORLD_RANK)
        return marker.exists()
    if smp.rank() == 1:
        return smp.recv_from(0, smp.RankType.WORLD_RANK).marker
    return None


def broadcast_waits_for_receivers(marker_dir):
    """Every receiver writes a marker right before recv_from; the broadcast returns after all."""
    markers = Path(marker_dir)
    if smp.rank() != 0:
        time.sleep(RECEIVER_DELAY)
        (markers / str(smp.rank())).touch()
        return smp.recv_from(0, smp.RankType.WORLD_RANK)
    smp.broadcast("to everyone", smp.WORLD)
    return sorted(int(p.name) for p in markers.iterdir())


def barrier_waits(group_name, marker_dir):
    """The last member writes a marker late, right before the barrier; the others check it after."""
    group = smp.CommGroup[group_name]
    members = shared_scenarios.group_members(smp, group_name)
    marker = Path(marker_dir) / f"{group_name}-{members[-1]}"
    if smp.rank() == members[-1]:
        time.sleep(RECEIVER_DELAY)
        marker.touch()
        smp.barrier(group)
        return True
    {"WORLD": smp.barrier, "MP_GROUP": smp.mp_barrier, "DP_GROUP": smp.dp_barrier}[group_name]()
    return marker.exists()


def wrong_ranks_and_groups():
    with pytest.raises(ValueError, match="does not exist for MP_RANK"):
        smp.send("x", smp.mp_size(), smp.RankType.MP_RANK)
    with pytest.raises(ValueError, match="does not exist for WORLD_RANK"):
        smp.recv_from(-1, smp.RankType.WORLD_RANK)
    with pytest.raises(ValueError, match="this process itself"):
        smp.send("x", smp.dp_rank(), smp.RankType.DP_RANK)
    with pytest.raises(TypeError, match="smp.RankType"):
        smp.send("x", 0, smp.WORLD)
    with pytest.raises(TypeError, match="smp.CommGroup"):
        smp.allgather("x", "WORLD")
    with pytest.raises(TypeError, match="smp.CommGroup"):
        smp.barrier(smp.RankType.MP_RANK)
    smp.barrier()  # the world still works afterwards
    return True


def _own_rank(rank_type):
    return {smp.RankType.WORLD_RANK: smp.rank, smp.RankType.MP_RANK: smp.mp_rank,
            smp.RankType.DP_RANK: smp.dp_rank}[rank_type]()


def _group_size(rank_type):
    return {smp.RankType.WORLD_RANK: smp.size, smp.RankType.MP_RANK: smp.mp_size,
            smp.RankType.DP_RANK: smp.dp_size}[rank_type]()


# ---- smp.step ----

class CustomType:
    """The seed's example of a user type that splits itself."""

    def __init__(self, tensor, other=None):
        self.data = tensor
        self.other = other

    def smp_slice(self, num_mb, mb, axis):
        split_size = self.data.size(axis) // num_mb
        return CustomType(self.data.narrow(axis, mb * split_size, split_size), (self.other, mb, axis))


Pair = namedtuple("Pair", "left right")


def step_splits_arguments():
    mbs = _microbatches()
    x = torch.arange(4 * mbs * 3).reshape(4 * mbs, 3)
    y = torch.arange(2 * 2 * mbs).reshape(2, 2 * mbs)
    weight = torch.ones(5)
    seen = []

    @smp.step(non_split_inputs=["weight"], input_split_axes={"y": 1})
    def record(x, y, weight, scale, *, note="default"):
        seen.append((x, y, weight, scale, note))
        return x.sum()

    record(x, y, weight, 2.5, note="kept")
    assert len(seen) == mbs
    for mb, (x_mb, y_mb, weight_mb, scale, note) in enumerate(seen):
        assert torch.equal(x_mb, x[4 * mb: 4 * (mb + 1)])
        assert torch.equal(y_mb, y[:, 2 * mb: 2 * (mb + 1)])
        assert weight_mb is weight  # not split
        assert (scale, note) == (2.5, "kept")  # non-tensors passed as they are
    return mbs


def step_splits_nested_structures():
    mbs = _microbatches()
    t = torch.arange(2 * mbs)
    batch = {"ids": [t, (t * 10, "label")], "pair": Pair(t, 7), "set": {t.float().sum().item()},
             "custom": CustomType(t.reshape(-1, 1), other="o")}
    seen = []

    @smp.step(input_split_axes={"custom": 1})
    def record(batch, custom):
        seen.append((batch, custom))
        return batch["ids"][0]

    record(batch, CustomType(t.reshape(1, -1), other="o"))
    for mb, (part, custom) in enumerate(seen):
        piece = t[2 * mb: 2 * (mb + 1)]
        assert torch.equal(part["ids"][0], piece) and torch.equal(part["ids"][1][0], piece * 10)
        assert part["ids"][1][1] == "label" and isinstance(part["ids"][1], tuple)
        assert isinstance(part["pair"], Pair) and torch.equal(part["pair"].left, piece)
        assert part["pair"].right == 7 and part["set"] == batch["set"]
        assert torch.equal(part["custom"].data, piece.reshape(-1, 1)) and part["custom"].other == ("o", mb, 0)
        assert torch.equal(custom.data, t.reshape(1, -1)[:, 2 * mb: 2 * (mb + 1)])
        assert custom.other == ("o", mb, 1)  # smp_slice got the argument's axis
    return len(seen)


class Trainer:
    def __init__(self):
        self.seen = []

    @smp.step
    def train_step(self, x):
        self.seen.append(x)
        return x * 2


def step_on_a_method():
    mbs = _microbatches()
    trainer, x = Trainer(), torch.arange(2 * mbs)
    doubled = trainer.train_step(x)
    assert [t.tolist() for t in trainer.seen] == [[2 * mb, 2 * mb + 1] for mb in range(mbs)]
    assert torch.equal(doubled.concat(), x * 2)
    return True


def step_output_reductions():
    mbs = _microbatches()
    x = torch.arange(2.0 * mbs).reshape(mbs * 2, 1)

    @smp.step
    def compute(x):
        return {"loss": x.sum(), "pred": x * 2, "extras": [x.mean(), "tag"], "count": x.shape[0]}

    out = compute(x)
    loss, pred = out["loss"], out["pred"]
    assert isinstance(loss, smp.StepOutput) and isinstance(pred, smp.StepOutput)
    sums = [x[2 * mb: 2 * mb + 2].sum() for mb in range(mbs)]
    assert len(loss.outputs) == mbs
    assert all(torch.equal(a, b) for a, b in zip(loss.outputs, sums, strict=True))
    assert torch.equal(loss.reduce_sum(), x.sum())
    assert torch.allclose(loss.reduce_mean(), x.sum() / mbs)
    assert torch.equal(loss.stack(), torch.stack(sums))
    assert torch.equal(pred.concat(), x * 2)
    assert pred.stack().shape == (mbs, 2, 1)
    assert isinstance(out["extras"][0], smp.StepOutput) and out["extras"][1] == ["tag"] * mbs
    assert out["count"] == [2] * mbs  # a non-tensor output: its values by microbatch, as SageMaker's
    return True


def step_detaches_outputs():
    x = torch.ones(2 * _microbatches(), requires_grad=True)

    def loss_of(x):
        return (x * 3).sum()

    detached = smp.step(loss_of)(x)
    kept = smp.step(detach_outputs=False)(loss_of)(x)
    assert not any(t.requires_grad for t in detached.outputs)
    assert all(t.requires_grad for t in kept.outputs)
    kept.reduce_sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 3.0))
    return True


def step_errors():
    mbs = _microbatches()

    @smp.step
    def identity(x):
        return x

    not_divisible = f"batch size {2 * mbs + 1} .* not divisible .* microbatches \\({mbs}\\)"
    with pytest.raises(ValueError, match=not_divisible):
        identity(torch.ones(2 * mbs + 1))
    with pytest.raises(ValueError, match="0-dimensional tensor.*non_split_inputs"):
        identity(torch.tensor(1.0))
    with pytest.raises(ValueError, match="split axis 3 does not exist"):
        smp.step(input_split_axes={"x": 3})(identity.__wrapped__)(torch.ones(mbs, 2))
    with pytest.raises(ValueError, match="non_split_inputs names \\['nope'\\]"):
        smp.step(non_split_inputs=["nope"])(identity.__wrapped__)
    with pytest.raises(ValueError, match="input_split_axes names \\['y'\\]"):
        smp.step(None, {"y": 1})(identity.__wrapped__)

    @smp.step
    def outer(x):
        return identity(x)

    with pytest.raises(RuntimeError, match="cannot be nested"):
        outer(torch.ones(mbs))

    @smp.step
    def ragged(x):
        ragged.calls = getattr(ragged, "calls", 0) + 1
        return [x] * ragged.calls

    with pytest.raises(ValueError, match="different lengths"):
        ragged(torch.ones(2 * mbs))
    return True


def _microbatches():
    calls = []
    smp.step(lambda x: calls.append(x))(torch.zeros(64))
    return len(calls)


# ---- DistributedModel and DistributedOptimizer ----

BATCH, FEATURES, STEPS, LEARNING_RATE = 16, 4, 6, 0.1


def make_problem():
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(BATCH, FEATURES, generator=generator, dtype=torch.float64)
    targets = torch.randn(BATCH, 1, generator=generator, dtype=torch.float64)
    return inputs, targets


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()


def distributed_training():
    """Train on this rank's DP shard of the batch; the model starts from rank 0's parameters
    although every other rank builds it from another seed."""
    model = smp.DistributedModel(make_model(seed=1 if smp.rank() == 0 else 100 + smp.rank()))
    optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=LEARNING_RATE))
    inputs, targets = make_problem()
    with pytest.raises(RuntimeError, match="inside an smp.step"):
        model.backward(torch.nn.functional.mse_loss(model(inputs), targets))
    losses = train_on_dp_shard(model, optimizer, inputs, targets, STEPS)
    return {"losses": losses, "parameters": list(model.state_dict().values())}  # gathered from the partitions


def optimizer_step_inside_step_fails():
    model = smp.DistributedModel(make_model(seed=1))
    optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=LEARNING_RATE))

    @smp.step
    def wrong(x):
        model.backward(model(x).sum())
        optimizer.step()

    with pytest.raises(RuntimeError, match="outside the smp.step function"):
        wrong(torch.ones(2 * _microbatches(), FEATURES, dtype=torch.float64))
    return True


# ---- on a GPU (NCCL) ----

def cuda_training():
    """distributed_training on this rank's GPU: the job's collectives run on NCCL, user code moves
    its batch to `cuda:<local_rank>` as on SageMaker, and every result comes back on the CPU."""
    device = torch.device("cuda", smp.local_rank())
    model = smp.DistributedModel(make_model(seed=1))
    optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=LEARNING_RATE))
    inputs, targets = (tensor.to(device) for tensor in make_problem())

    @smp.step
    def train_step(x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        model.backward(loss)
        return loss

    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        losses.append(train_step(inputs, targets).reduce_mean().item())
        optimizer.step()
    summed = torch.full((3,), float(smp.rank() + 1), device=device)
    torch.distributed.all_reduce(summed)
    return {
        "backend": torch.distributed.get_backend(),
        "devices": sorted({str(p.device) for p in model.parameters()}),
        "all_reduce": summed.cpu(),
        "losses": losses,
        "parameters": [p.detach().cpu() for p in model.parameters()],
    }
