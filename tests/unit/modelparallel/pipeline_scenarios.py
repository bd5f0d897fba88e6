"""What the ranks of a test World run for the pipeline (partitions > 1); scenarios.serve finds
these by name too. Models and data are float64, so that pipelined and single-process training
differ only by the rounding of the microbatch gradient sums."""

import contextlib
import dataclasses
import importlib

import pytest
import smdistributed.modelparallel.torch as smp
import torch
import torch.nn.functional as F
from torch import nn

from .training import train_on_dp_shard

FEATURES, BATCH, STEPS, LEARNING_RATE = 8, 16, 5, 0.1
LINEAR_PARAMETERS = FEATURES * FEATURES + FEATURES
TREE_PARAMETERS = 4 * LINEAR_PARAMETERS


class Block(nn.Module):
    """A module whose forward is a chain of its children with function steps between them."""

    def __init__(self, partitions=(None, None)):
        super().__init__()
        self.first = _created_on(partitions[0])
        self.second = _created_on(partitions[1])

    def forward(self, x):
        return torch.tanh(self.second(torch.tanh(self.first(x))))


class Tree(nn.Module):
    """Two Blocks run in order: four equal Linear layers in all. `manual` places them on
    partitions 0, 1, 2 with smp.partition contexts and on 3 with smp.set_partition."""

    def __init__(self, manual=False):
        super().__init__()
        self.head = Block((0, 1) if manual else (None, None))
        self.tail = Block((2, None) if manual else (None, None))
        if manual:
            smp.set_partition(self.tail.second, 3)

    def forward(self, x):
        return self.tail(self.head(x))


def _created_on(partition):
    if partition is None:
        return nn.Linear(FEATURES, FEATURES)
    with smp.partition(partition):
        return nn.Linear(FEATURES, FEATURES)


def make_tree(seed, manual=False):
    torch.manual_seed(seed)
    return Tree(manual).double()


def make_problem():
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(BATCH, FEATURES, generator=generator, dtype=torch.float64)
    targets = torch.randn(BATCH, FEATURES, generator=generator, dtype=torch.float64)
    return inputs, targets


@contextlib.contextmanager
def parameters(**changes):
    """Run with some of the job's model-parallel parameters changed (the schedule is read at each
    step, the partitioning parameters at the first): one world then covers both schedules."""
    current = importlib.import_module("smdistributed.modelparallel.torch.state").current
    saved = current.value
    current.value = dataclasses.replace(saved, config=dataclasses.replace(saved.config, **changes))
    try:
        yield
    finally:
        current.value = saved


def pipelined_training(schedule, manual=False):
    """Train the Tree on this rank's DP shard; every rank builds it from its own seed, rank 0's wins."""
    with parameters(pipeline=schedule, auto_partition=not manual):
        seed = 1 if smp.rank() == 0 else 100 + smp.rank()
        model = smp.DistributedModel(make_tree(seed, manual=manual))
        optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=LEARNING_RATE))
        inputs, targets = make_problem()
        assert not model.partitioned
        losses = train_on_dp_shard(model, optimizer, inputs, targets, STEPS)
        with pytest.raises(RuntimeError):  # the other stages' weights are not here: only the pipeline
            model.module(inputs)  # computes the model's output
        return {
            "losses": losses,
            "parameters": list(model.state_dict().values()),  # gathered from the MP group
            "partitioned": model.partitioned,
            "local": sum(p.numel() for p in model.local_parameters()),
            "held": sum(p.numel() for p in model.parameters()),  # the other stages' are emptied
            "local_modules": sorted(n for n, m in model.local_named_modules() if isinstance(m, nn.Linear)),
            "pp": (smp.pp_rank(), smp.pp_size(), smp.rdp_rank(), smp.rdp_size(), smp.tp_rank(),
                   smp.tp_size()),
        }


def pipelined_evaluation():
    """AWS's example evaluation step: Python numbers from .item() come back as lists by microbatch,
    tensors as StepOutputs, on every rank."""
    model = smp.DistributedModel(make_tree(seed=1))
    inputs, targets = make_problem()

    @smp.step
    def test_step(x, y):
        output = model(x)
        loss = F.mse_loss(output, y, reduction="sum").item()
        correct = output.argmax(dim=1).eq(y.argmax(dim=1)).sum().item()
        return loss, correct, output

    model.eval()
    with torch.no_grad():
        loss, correct, output = test_step(inputs, targets)
    return {"loss": loss, "correct": correct, "output": output.concat(),
            "grad": any(t.requires_grad for t in output.outputs)}


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(FEATURES, FEATURES)

    def forward(self, x):
        return x + self.inner(x)


class Branches(nn.Module):
    """Children on two partitions whose outputs are added: not a chain."""

    def __init__(self):
        super().__init__()
        with smp.partition(0):
            self.left = nn.Linear(FEATURES, FEATURES)
        with smp.partition(1):
            self.right = nn.Linear(FEATURES, FEATURES)

    def forward(self, x):
        return self.left(x) + self.right(x)


def unsplittable_modules_are_refused():
    inputs, _ = make_problem()
    residual = smp.DistributedModel(Residual().double())
    with pytest.raises(ValueError, match=r"cannot be split into 2 partitions: it has only 1 pipeline unit.*"
                                         r"module '<root>' \(Residual\): the value 'x' is used 2 times"):
        smp.step(lambda x: residual(x))(inputs)
    assert not residual.partitioned
    with parameters(auto_partition=False):
        branches = smp.DistributedModel(Branches().double())
        with pytest.raises(ValueError, match=r"module '<root>' \(Branches\) holds modules of partitions "
                                             r"\[0, 1\] but cannot be split: the value 'x' is used 2 times"):
            smp.step(lambda x: branches(x))(inputs)
    smp.barrier()  # the world still works
    return True


def state_dicts_of_a_partitioned_model():
    """local_state_dict holds this rank's entries marked partial; state_dict the whole model;
    load_state_dict takes either and restores this rank's parameters."""
    model = smp.DistributedModel(make_tree(seed=1))
    inputs, targets = make_problem()
    smp.step(lambda x, y: model.backward(F.mse_loss(model(x), y)))(inputs, targets)
    local, full = model.local_state_dict(), model.state_dict()
    expected = make_tree(seed=1).state_dict()
    assert list(full) == list(expected)
    assert all(torch.equal(full[k], expected[k]) for k in expected)
    assert local.pop("_smp_is_partial") is True
    own = dict(model.local_named_parameters())
    assert list(local) == list(own) and all(torch.equal(local[k], own[k]) for k in own)
    for source in (full, {**local, "_smp_is_partial": True}):
        # as torch's, the state dicts' local entries share the parameters' storage
        source = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in source.items()}
        with torch.no_grad():
            for param in model.local_parameters():
                param.add_(1.0)
        model.load_state_dict(source)
        assert all(torch.equal(p, expected[k]) for k, p in model.local_named_parameters())
    with pytest.raises(RuntimeError, match="missing keys"):
        model.load_state_dict({"head.first.weight": expected["head.first.weight"]})
    return sorted(own)


def a_failed_step_leaves_the_pipeline_usable():
    """A step function that raises on every rank after microbatch 0's backward pass leaves the
    first stage's activations of microbatch 1 unreceived; the next step must not take them."""
    model = smp.DistributedModel(make_tree(seed=1))
    inputs, targets = make_problem()

    def failing(x, y):
        model.backward(F.mse_loss(model(x), y))
        raise KeyError("the step function's own error")

    with pytest.raises(KeyError, match="own error"):
        smp.step(failing)(inputs, targets)
    losses = smp.step(lambda x, y: F.mse_loss(model(x), y, reduction="sum"))(inputs, targets)
    return losses.reduce_sum().item()


def constructor_options():
    """SageMaker's DistributedModel options: average_grads_across_microbatches=False sums the
    microbatches' gradients; options whose behaviour is not built are refused by name."""
    inputs, targets = make_problem()
    gradients = []
    for average in (True, False):
        model = smp.DistributedModel(make_tree(seed=1), average_grads_across_microbatches=average,
                                     trace_device="cpu", overlapping_allreduce=False)
        smp.step(lambda x, y, m=model: m.backward(F.mse_loss(m(x), y)))(inputs, targets)
        gradients.append([p.grad for p in model.local_parameters()])
    for averaged, summed in zip(*gradients, strict=True):
        assert torch.allclose(summed, averaged * _microbatches(), rtol=1e-9)
    for option, message in [({"backward_passes_per_step": 2}, "backward_passes_per_step=2"),
                            ({"trace_execution_times": True}, "trace_execution_times=True"),
                            ({"trace_device": "tpu"}, "trace_device must be")]:
        with pytest.raises((NotImplementedError, ValueError), match=message):
            smp.DistributedModel(make_tree(seed=1), **option)
    return [smp.allgather(smp.rank(), group) for group in (smp.CommGroup.PP_GROUP, smp.CommGroup.RDP_GROUP)]


def _microbatches():
    calls = []
    smp.step(lambda x: calls.append(x))(torch.zeros(64))
    return len(calls)
