"""Which partition runs which part of the model.

The model is cut into *pipeline units* that run one after another, each taking the previous
one's output: a module whose forward is a chain of steps is replaced by its steps (recursively),
a module that is not a chain stays one unit. A *chain* is what torch.fx records for the module's
forward with its submodules kept opaque: one input, then steps (a submodule call, or a function
or method such as `F.relu(x)` or `x.flatten(1)`) that each use only the previous step's value,
whose last value is returned. `nn.Sequential` is a chain of its children. Modules of torch
itself (other than `nn.Sequential`) are never opened. A module is *not* split when its forward
has several inputs, reuses a value (a residual `x + f(x)`), uses its own parameters or buffers,
or cannot be traced (control flow on tensor values): such a module runs whole on one partition.

Partitions are consecutive runs of units, partition 0 first, so that a microbatch's activations
cross each MP group from mp_rank 0 to the last mp_rank once.

- Automatic (`auto_partition: true`): every module that can be split is; the units are cut into
  P consecutive groups that minimise the largest group cost (exact, by dynamic programming).
  A unit's cost is `memory_weight * its share of the model's parameter and buffer elements +
  (1 - memory_weight) * its share of the model's forward FLOPs` on the first microbatch
  (torch.utils.flop_counter, which counts matrix products and convolutions), `memory_weight`
  being 0.8 with `optimize: memory` (SageMaker's default), 0.2 with `speed`, or the parameter.
- Manual (`auto_partition: false`): a module belongs to the innermost `smp.partition(i)` context
  it was created in, or to the partition `smp.set_partition(module, i)` gave it, else to its
  parent's partition, the root's being `default_partition`. A module is split only when its
  submodules are on different partitions; function steps go with the step before them.
"""

import contextlib
import functools
from dataclasses import dataclass

import torch
import torch.fx

PARTITION_ATTR = "_smp_partition"

_open_contexts = []  # partition indices of the smp.partition contexts now open, innermost last
_module_init = torch.nn.Module.__init__


@contextlib.contextmanager
def partition(index):
    """Place the modules created inside on partition `index` (with `auto_partition: false`)."""
    _check_index(index)
    if not _open_contexts:
        torch.nn.Module.__init__ = _init_in_partition
    _open_contexts.append(index)
    try:
        yield
    finally:
        _open_contexts.pop()
        if not _open_contexts:
            torch.nn.Module.__init__ = _module_init


@functools.wraps(_module_init)
def _init_in_partition(self, *args, **kwargs):
    _module_init(self, *args, **kwargs)
    if _open_contexts:  # a module records the context it is created in, not where it is assigned
        object.__setattr__(self, PARTITION_ATTR, _open_contexts[-1])


def set_partition(module, index):
    """Place `module` (and the submodules without a partition of their own) on partition `index`."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"smp.set_partition takes a torch.nn.Module, got {type(module).__name__}")
    _check_index(index)
    object.__setattr__(module, PARTITION_ATTR, index)


def _check_index(index):
    from .state import is_initialized, state

    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"a partition index must be a non-negative integer, got {index!r}")
    if is_initialized() and index >= state().config.partitions:
        partitions = state().config.partitions
        raise ValueError(f"partition {index} does not exist: there are {partitions} partitions "
                         f"(0..{partitions - 1})")


class UnsplittableModule(ValueError):
    """The partitioning needs to split a module whose forward is not a chain of steps."""


@dataclass
class Unit:
    """One step of the model's forward: a module (`module` set) or a function step."""

    name: str  # the module's qualified name, or "<enclosing module>.<fx node name>" for a function
    owner: str  # the module whose partition a manual plan gives it ("" is the root)
    run: object  # callable(*args, **kwargs) -> output
    module: object = None

    def elements(self):
        """Parameter and buffer elements held by the unit."""
        if self.module is None:
            return 0
        return sum(t.numel() for t in [*self.module.parameters(), *self.module.buffers()])


def chain_steps(module):
    """The fx nodes of `module`'s forward when it is a chain (see the module docstring).

    Raises UnsplittableModule with the reason otherwise.
    """
    try:
        graph = _OpaqueSubmodules(module).trace(module)
    except Exception as exc:  # noqa: BLE001 - any tracing failure means "cannot be split", with its reason
        raise UnsplittableModule(f"its forward cannot be traced by torch.fx ({type(exc).__name__}: "
                                 f"{exc})") from None
    nodes = list(graph.nodes)
    inputs = [n for n in nodes if n.op == "placeholder"]
    if len(inputs) != 1:
        raise UnsplittableModule(f"its forward takes {len(inputs)} inputs, not one")
    previous, steps = inputs[0], []
    for node in nodes[1:]:
        if len(previous.users) != 1:
            raise UnsplittableModule(f"the value {previous.name!r} is used {len(previous.users)} times "
                                     "(a branch or residual connection)")
        if node.op == "output":
            return steps
        if node.op == "get_attr":
            raise UnsplittableModule(f"its forward uses its own tensor {node.target!r}")
        if node.all_input_nodes != [previous]:
            raise UnsplittableModule(f"step {node.name!r} does not take exactly the previous step's value")
        steps.append(node)
        previous = node
    raise UnsplittableModule("its forward returns no value")


class _OpaqueSubmodules(torch.fx.Tracer):
    def __init__(self, root):
        super().__init__()
        self._root = root

    def is_leaf_module(self, module, qualified_name):
        return module is not self._root


def _opens(module):
    """Whether the split may look inside `module`: nn.Sequential and modules not of torch itself."""
    if isinstance(module, torch.nn.Sequential):
        return True
    return not type(module).__module__.startswith("torch.") and any(True for _ in module.children())


def _function_step(node):
    def run(value):
        args = torch.fx.node.map_arg(node.args, lambda _: value)
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda _: value)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        return node.target(*args, **kwargs)

    return run


def _join(prefix, name):
    return f"{prefix}.{name}" if prefix else name


def _steps_as_units(module, name, expand):
    """The units of a chain module: its submodule steps expanded by `expand`, its function steps."""
    units = []
    for node in chain_steps(module):
        if node.op == "call_module":
            units.extend(expand(module.get_submodule(node.target), _join(name, node.target)))
        else:
            units.append(Unit(name=_join(name, node.name), owner=name, run=_function_step(node)))
    return units


def _sequential_units(module, name, expand):
    units = []
    for child_name, child in module.named_children():
        units.extend(expand(child, _join(name, child_name)))
    return units


def _open(module, name, expand):
    if isinstance(module, torch.nn.Sequential):
        return _sequential_units(module, name, expand)
    return _steps_as_units(module, name, expand)


def _whole(module, name):
    return [Unit(name=name, owner=name, run=module, module=module)]


# ---- automatic partitioning ----

def automatic_units(model):
    """Every module that can be split, split; and why each module that could not be, was not."""
    reasons = {}

    def expand(module, name):
        if not _opens(module):
            return _whole(module, name)
        try:
            return _open(module, name, expand)
        except UnsplittableModule as exc:
            reasons[name] = f"{_describe(module, name)}: {exc}"
            return _whole(module, name)

    return expand(model, ""), reasons


def automatic_plan(units, reasons, partitions, memory_weight, flops=None):
    """The partition of each unit: consecutive groups minimising the largest group cost."""
    if len(units) < partitions:
        unsplit = "; ".join(reasons.values()) or "its modules have no submodules left to split"
        raise UnsplittableModule(
            f"the model cannot be split into {partitions} partitions: it has only {len(units)} pipeline "
            f"unit(s) ({', '.join(_label(u) for u in units)}). Not split: {unsplit}"
        )
    costs = unit_costs(units, memory_weight, flops)
    return _balance(costs, partitions)


def unit_costs(units, memory_weight, flops=None):
    elements = [u.elements() for u in units]
    compute = [(flops or {}).get(u.name, 0) for u in units]
    if not sum(compute):  # nothing measured (no matrix products): balance memory alone
        return _shares(elements)
    return [memory_weight * m + (1 - memory_weight) * c for m, c in zip(_shares(elements), _shares(compute),
                                                                         strict=True)]


def _shares(values):
    total = sum(values)
    return [v / total if total else 0.0 for v in values]


def _balance(costs, parts):
    """Cut `costs` into `parts` consecutive non-empty groups minimising the largest group sum."""
    n = len(costs)
    prefix = [0.0]
    for cost in costs:
        prefix.append(prefix[-1] + cost)
    # best[k][i]: the smallest largest-group cost of the first i units in k groups; cut[k][i]: its last cut
    best = [[float("inf")] * (n + 1) for _ in range(parts + 1)]
    cut = [[0] * (n + 1) for _ in range(parts + 1)]
    for i in range(1, n + 1):
        best[1][i] = prefix[i]
    for k in range(2, parts + 1):
        for i in range(k, n + 1):
            for j in range(k - 1, i):
                candidate = max(best[k - 1][j], prefix[i] - prefix[j])
                if candidate < best[k][i] - 1e-12:
                    best[k][i], cut[k][i] = candidate, j
    assignment, end = [0] * n, n
    for k in range(parts, 0, -1):
        start = cut[k][end] if k > 1 else 0
        assignment[start:end] = [k - 1] * (end - start)
        end = start
    return assignment


# ---- manual partitioning ----

def manual_plan(model, partitions, default_partition):
    """The units and each one's partition from smp.partition / smp.set_partition."""
    assigned = _assigned_partitions(model, default_partition)
    for name, index in assigned.items():
        if index >= partitions:
            raise ValueError(f"module {name or '<root>'!r} is placed on partition {index}, but there are "
                             f"{partitions} partitions (0..{partitions - 1})")

    def expand(module, name):
        spanned = {index for sub, index in assigned.items()
                   if not name or sub == name or sub.startswith(f"{name}.")}
        if len(spanned) == 1:
            return _whole(module, name)
        if not _opens(module):
            raise UnsplittableModule(f"{_describe(module, name)} holds modules of partitions "
                                     f"{sorted(spanned)} but is a torch module that is not split")
        try:
            return _open(module, name, expand)
        except UnsplittableModule as exc:
            raise UnsplittableModule(f"{_describe(module, name)} holds modules of partitions "
                                     f"{sorted(spanned)} but cannot be split: {exc}") from None

    units = expand(model, "")
    return units, _manual_assignment(units, assigned)


def _assigned_partitions(model, default_partition):
    assigned = {}
    for name, module in model.named_modules():  # parents come before their children
        parent = assigned.get(name.rpartition(".")[0], default_partition) if name else default_partition
        assigned[name] = getattr(module, PARTITION_ATTR, parent)
    return assigned


def _manual_assignment(units, assigned):
    modules = [assigned[u.name] if u.module is not None else None for u in units]
    assignment, previous = [], next((p for p in modules if p is not None), 0)
    for unit, index in zip(units, modules, strict=True):
        index = previous if index is None else index  # a function step goes with the step before it
        if index < previous:
            raise ValueError(
                f"module {_label(unit)} is on partition {index} but runs after a module of partition "
                f"{previous}: the pipeline runs partitions in order 0, 1, ..., so place modules in the order "
                "the forward calls them"
            )
        assignment.append(index)
        previous = index
    return assignment


def _describe(module, name):
    return f"module {name or '<root>'!r} ({type(module).__name__})"


def _label(unit):
    return repr(unit.name or "<root>")
