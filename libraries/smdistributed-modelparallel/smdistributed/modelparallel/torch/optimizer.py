"""DistributedOptimizer: a torch.optim.Optimizer (to LR schedulers and grad scalers) over the
local parameters of this rank's partition.

The wrapped optimizer may have been built from the whole module before it was wrapped (as AWS's
examples do); once a DistributedModel is partitioned, the parameters that are not local to this
rank are removed from its param groups and their state dropped, so that this rank neither keeps
them alive nor steps them. The groups keep their identity, so a scheduler created before the
partition still drives them.

State dicts name parameters by their `DistributedModel.named_parameters()` names, which are the
same on every rank: `local_state_dict()` is the wrapped optimizer's own (indices over the local
parameters) plus those names and `_smp_is_partial: True`; `state_dict()` gathers the local ones of
the MP group and merges them in mp_rank order, a torch state dict of the whole model (on the CPU).
"""

import torch

from ..common import step_context
from . import registry
from .comm import MP_GROUP, allgather
from .state import state

PARTIAL_KEY = "_smp_is_partial"
NAMES_KEY = "_smp_param_names"


class DistributedOptimizer(torch.optim.Optimizer):
    # A grad scaler then always unscales through its own unscale_ (smp.amp.GradScaler agrees on
    # inf/nan there), even for a wrapped fused optimizer that would take the scale itself.
    _step_supports_amp_scaling = False

    def __init__(self, optimizer, static_loss_scale=1.0, dynamic_loss_scale=False, **dynamic_loss_args):
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"DistributedOptimizer wraps a torch.optim.Optimizer, got {type(optimizer).__name__}")
        if dynamic_loss_scale or static_loss_scale not in (1.0, None) or dynamic_loss_args:
            raise NotImplementedError(
                "DistributedOptimizer's FP16 loss scaling (static_loss_scale, dynamic_loss_scale, "
                "dynamic_loss_args) is not implemented; use smp.amp.GradScaler"
            )
        state()
        self.optimizer = optimizer
        self._localized = False
        self._pending_partial = None  # a partial state dict loaded before the partition (below)
        self._localize()
        registry.register_optimizer(self)

    # The wrapped optimizer's own containers, so that schedulers and scalers change the real ones.
    @property
    def param_groups(self):
        self._localize()
        return self.optimizer.param_groups

    @property
    def state(self):
        self._localize()
        return self.optimizer.state

    @property
    def defaults(self):
        return self.optimizer.defaults

    def __getattr__(self, name):
        """Everything else (hooks, flags such as `_step_supports_amp_scaling`) is the wrapped
        optimizer's; only reached for attributes this object does not have itself."""
        if name == "optimizer":
            raise AttributeError(name)
        return getattr(self.optimizer, name)

    def step(self, closure=None):
        if step_context.current() is not None:
            raise RuntimeError("optimizer.step() must be called outside the smp.step function, once per step")
        self._localize()
        return self.optimizer.step() if closure is None else self.optimizer.step(closure)

    def zero_grad(self, set_to_none=True):
        self._localize()
        return self.optimizer.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group):
        return self.optimizer.add_param_group(param_group)

    def local_state_dict(self):
        """This rank's optimizer state: the local parameters only."""
        self._localize()
        local = self.optimizer.state_dict()
        local[NAMES_KEY] = self._group_names()
        local[PARTIAL_KEY] = True
        return local

    def state_dict(self):
        """The optimizer state of the whole model, gathered from the MP group (collective: every
        rank of the MP group must call it)."""
        parts = allgather(_to_cpu(self.local_state_dict()), MP_GROUP)
        return merge(parts)

    def load_state_dict(self, state_dict):
        """A local state dict (this rank's own) or a full one (this rank takes its parameters'
        entries, by name); a plain torch state dict loads as it is when nothing is partitioned.
        A partial one given before the model is partitioned (a restarted job loads before its
        first step) is kept and loaded once the partition is known, as SageMaker's library
        delays it."""
        if state_dict.get(PARTIAL_KEY) and not self._localize():
            self._pending_partial = state_dict
            return
        self._localize()
        if state_dict.get(PARTIAL_KEY):
            local = {k: v for k, v in state_dict.items() if k not in (PARTIAL_KEY, NAMES_KEY)}
            self._check_names(state_dict.get(NAMES_KEY))
        elif NAMES_KEY in state_dict:
            local = self._select(state_dict)
        else:
            local = state_dict
        self.optimizer.load_state_dict(local)

    def __repr__(self):
        return f"DistributedOptimizer({self.optimizer!r})"

    def _localize(self):
        """Drop the parameters no partition of this rank holds, once every model that owns some of
        this optimizer's parameters is partitioned (other models of the process are not its own);
        True once done."""
        if self._localized:
            return True
        mine = {id(p) for group in self.optimizer.param_groups for p in group["params"]}
        owners = [m for m in registry.models() if any(id(p) in mine for p in m.parameters())]
        if not owners or not all(getattr(m, "partitioned", False) for m in owners):
            return False
        local = {id(p) for m in owners for p in m.local_parameters()}
        for group in self.optimizer.param_groups:
            dropped = [p for p in group["params"] if id(p) not in local]
            group["params"] = [p for p in group["params"] if id(p) in local]
            for param in dropped:
                self.optimizer.state.pop(param, None)
        self._localized = True
        if self._pending_partial is not None:
            pending, self._pending_partial = self._pending_partial, None
            self.load_state_dict(pending)
        return True

    def _group_names(self):
        """The names of the parameters of each param group."""
        names = self._local_names()
        return [[names[id(p)] for p in group["params"]] for group in self.optimizer.param_groups]

    def _local_names(self):
        names = {}
        for model in registry.models():
            by_id = {id(p): name for name, p in model.named_parameters()}
            for param in model.local_parameters():
                if id(param) in by_id:
                    names[id(param)] = by_id[id(param)]
        missing = [p for g in self.optimizer.param_groups for p in g["params"] if id(p) not in names]
        if missing:
            raise ValueError(
                f"{len(missing)} parameter(s) of the optimizer belong to no smp.DistributedModel; "
                "a DistributedOptimizer's state dicts name parameters by their model's names"
            )
        return names

    def _check_names(self, names):
        if names is None:
            return
        mine = self._group_names()
        if names != mine:
            raise ValueError(
                "this partial optimizer state dict is another partition's: its parameters are "
                f"{names}, this rank's are {mine} (load the file of this rank's pp_rank)"
            )

    def _select(self, full):
        """This rank's groups from a full state dict: its parameters' entries, re-indexed."""
        mine = self._group_names()
        index = {name: i for names, group in zip(full[NAMES_KEY], full["param_groups"], strict=True)
                 for name, i in zip(names, group["params"], strict=True)}
        unknown = [n for group in mine for n in group if n not in index]
        if unknown:
            raise ValueError(f"the optimizer state dict has no entry for the parameters {unknown}")
        if len(mine) != len(full["param_groups"]):
            raise ValueError(f"the optimizer state dict has {len(full['param_groups'])} param groups, "
                             f"this optimizer {len(mine)}")
        groups, states, position = [], {}, 0
        for names, group in zip(mine, full["param_groups"], strict=True):
            ids = list(range(position, position + len(names)))
            for name, new_id in zip(names, ids, strict=True):
                if index[name] in full["state"]:
                    states[new_id] = full["state"][index[name]]
            groups.append({**group, "params": ids})
            position += len(names)
        return {"state": states, "param_groups": groups}


def merge(parts):
    """One torch state dict (integer ids over the whole model, group by group in mp_rank order)
    from the MP group's local state dicts. A parameter held by several partitions (tied) once."""
    first = parts[0]
    groups, states, names_out, position = [], {}, [], 0
    for g, hyper in enumerate(first["param_groups"]):
        seen, ids, names = set(), [], []
        for part in parts:
            for name, old_id in zip(part[NAMES_KEY][g], part["param_groups"][g]["params"], strict=True):
                if name in seen:
                    continue
                seen.add(name)
                if old_id in part["state"]:
                    states[position] = part["state"][old_id]
                ids.append(position)
                names.append(name)
                position += 1
        groups.append({**hyper, "params": ids})
        names_out.append(names)
    return {"state": states, "param_groups": groups, NAMES_KEY: names_out}


def _to_cpu(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_cpu(v) for v in value]
    return value
