"""How a model is cut into pipeline units and partitions, and the schedules' orders: in one
process, without a world. SageMaker's documented behaviour checked: `auto_partition` (default
true) balances the partitions, `optimize: speed|memory` weighs computation against memory
(`memory_weight` 0.2 / 0.8); with `auto_partition: false`, modules go to the innermost
`smp.partition(i)` they were created in, `smp.set_partition` places a module, the rest goes to
`default_partition`; `pipeline` is `simple` or `interleaved`."""

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from smdistributed.modelparallel.torch.model import _measure_flops  # noqa: E402
from smdistributed.modelparallel.torch.partition import (  # noqa: E402
    UnsplittableModule,
    automatic_plan,
    automatic_units,
    manual_plan,
    partition,
    set_partition,
)
from smdistributed.modelparallel.torch.schedule import actions  # noqa: E402
from torch import nn  # noqa: E402


class Features(nn.Module):  # AWS's smmodelparallel_pt_mnist.py Net1, smaller
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        return torch.flatten(x, 1)


class Classifier(nn.Module):  # Net2
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), 1)


class Grouped(nn.Module):  # GroupedNet
    def __init__(self):
        super().__init__()
        self.net1 = Features()
        self.net2 = Classifier()

    def forward(self, x):
        return self.net2(self.net1(x))


def test_a_module_tree_becomes_its_steps_in_order_and_runs_the_same():
    model = Grouped()
    units, reasons = automatic_units(model)
    assert [u.name for u in units] == [
        "net1.conv1", "net1.relu", "net1.conv2", "net1.relu_1", "net1.max_pool2d", "net1.flatten",
        "net2.fc1", "net2.relu", "net2.fc2", "net2.log_softmax",
    ]
    assert reasons == {}
    x = torch.randn(3, 1, 8, 8)
    value = units[0].run(x)
    for unit in units[1:]:
        value = unit.run(value)
    assert torch.equal(value, model(x))


def test_torch_modules_stay_whole_and_sequential_is_split():
    inner = nn.Sequential(nn.ReLU(), nn.Linear(2, 2))
    units, _ = automatic_units(nn.Sequential(nn.Linear(2, 2), nn.GRU(2, 2), inner))
    assert [u.name for u in units] == ["0", "1", "2.0", "2.1"]


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(2, 2)

    def forward(self, x):
        return x + self.inner(x)


class DataDependent(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(2, 2)

    def forward(self, x):
        return self.inner(x) if x.sum() > 0 else x


@pytest.mark.parametrize("module,reason", [
    (Residual(), "the value 'x' is used 2 times"),
    (DataDependent(), "its forward cannot be traced by torch.fx"),
])
def test_what_is_not_a_chain_stays_whole_and_is_named_when_a_split_needs_it(module, reason):
    units, reasons = automatic_units(nn.Sequential(nn.Linear(2, 2), module))
    assert [u.name for u in units] == ["0", "1"]
    assert reason in reasons["1"] and f"({type(module).__name__})" in reasons["1"]
    assert automatic_plan(units, reasons, 2, 0.8) == [0, 1]
    name = type(module).__name__
    expected = f"into 3 partitions: it has only 2 pipeline unit.*module '1' \\({name}\\): {reason}"
    with pytest.raises(UnsplittableModule, match=expected):
        automatic_plan(units, reasons, 3, 0.8)


def test_automatic_partitions_balance_memory_or_computation():
    """Convolutions: few parameters, many FLOPs; a Linear layer: many parameters, few FLOPs.
    `optimize: memory` balances parameters, `speed` computation."""
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1),
                          nn.Conv2d(16, 16, 3, padding=1), nn.Flatten(), nn.Linear(16 * 16 * 16, 16))
    units, reasons = automatic_units(model)
    flops = _measure_flops(units, (torch.zeros(2, 1, 16, 16),), {})
    assert flops["0"] < flops["1"] == flops["2"] and flops["4"] < flops["1"]
    memory, speed = (automatic_plan(units, reasons, 2, memory_weight=w, flops=flops) for w in (0.8, 0.2))
    assert memory == automatic_plan(units, reasons, 2, memory_weight=1.0) == [0, 0, 0, 1, 1]
    assert speed == [0, 0, 1, 1, 1]


def test_manual_partitions_innermost_context_set_partition_and_default():
    class Model(nn.Module):  # SageMaker's smp.partition example, in pipeline order
        def __init__(self):
            super().__init__()
            self.child3 = nn.Linear(2, 2)  # default_partition
            with partition(1):
                self.child0 = nn.Linear(2, 2)
                with partition(2):
                    self.child1 = nn.Linear(2, 2)
                self.child2 = nn.Linear(2, 2)
            self.child4 = nn.Linear(2, 2)
            set_partition(self.child4, 3)

        def forward(self, x):
            return self.child4(self.child1(self.child2(torch.relu(self.child0(self.child3(x))))))

    units, assignment = manual_plan(Model(), 4, 0)
    assert [(u.name, p) for u, p in zip(units, assignment, strict=True)] == [
        ("child3", 0), ("child0", 1), ("relu", 1), ("child2", 1), ("child1", 2), ("child4", 3)]


def test_manual_partitions_must_follow_the_forward_order():
    class Backwards(nn.Module):
        def __init__(self):
            super().__init__()
            with partition(1):
                self.first = nn.Linear(2, 2)
            self.second = nn.Linear(2, 2)

        def forward(self, x):
            return self.second(self.first(x))

    with pytest.raises(ValueError, match="'second' is on partition 0 but runs after a module of partition 1"):
        manual_plan(Backwards(), 2, 0)
    units, assignment = manual_plan(Backwards(), 2, 1)  # default_partition 1: all of it on partition 1,
    assert ([u.name for u in units], assignment) == ([""], [1])  # so the model is not split


def test_partition_indices_are_checked():
    original = nn.Module.__init__
    with pytest.raises(ValueError, match="non-negative integer"), partition(-1):
        pass
    with pytest.raises(TypeError, match="torch.nn.Module"):
        set_partition("model", 0)
    with partition(1):
        assert nn.Module.__init__ is not original
    assert nn.Module.__init__ is original  # the context puts torch's back


@pytest.mark.parametrize("stage,expected", [
    (0, "F0 F1 F2 F3 B0 B1 B2 B3"),
    (1, "F0 F1 F2 B0 F3 B1 B2 B3"),
    (3, "F0 B0 F1 B1 F2 B2 F3 B3"),
])
def test_interleaved_runs_one_forward_one_backward_once_the_pipe_is_full(stage, expected):
    assert " ".join(f"{k}{mb}" for k, mb in actions("interleaved", stage, 4, 4)) == expected


def test_simple_runs_all_forwards_then_all_backwards():
    assert " ".join(f"{k}{mb}" for k, mb in actions("simple", 1, 2, 3)) == "F0 F1 F2 B0 B1 B2"
    assert " ".join(f"{k}{mb}" for k, mb in actions("interleaved", 0, 4, 2)) == "F0 F1 B0 B1"
