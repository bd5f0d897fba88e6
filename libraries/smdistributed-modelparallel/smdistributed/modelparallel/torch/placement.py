"""What one rank holds once the model is partitioned: its stage's units, on its device, and the
parameters and buffers they own; every other parameter and buffer is emptied in place.

Emptied parameters stay the same Parameter objects (their `.data` becomes a 0-element tensor),
so that an optimizer created over `model.parameters()` before the partition keeps valid
references: they never get a gradient, so torch's optimizers skip them and hold no state for
them. A tensor belongs to the unit whose module holds it; tensors no unit holds (not used by the
forward) belong to partition 0.
"""

import torch


class LocalPartition:
    def __init__(self, model, units, assignment, stage, device):
        self.units = [unit for unit, index in zip(units, assignment, strict=True) if index == stage]
        owners = tensor_owners(model, units, assignment)
        self._owners = set(owners)
        self._local_names = {name for name, index in owners.items() if index == stage}
        self._stage = stage
        self._modules = [unit.module for unit in self.units if unit.module is not None]
        _place(model, owners, stage, device)

    def run(self, args, kwargs):
        """This stage's partition on its input: the model's arguments on stage 0, else the
        activations received from the stage before."""
        if not self.units:  # a manual plan may leave a partition empty: it passes its input on
            if kwargs or len(args) != 1:
                raise RuntimeError("an empty first partition cannot pass on several model arguments")
            return args[0]
        value = self.units[0].run(*args, **kwargs)
        for unit in self.units[1:]:
            value = unit.run(value)
        return value

    def owns(self, name):
        """Whether the state-dict entry `name` is this rank's (entries that are no parameter or
        buffer, such as a module's extra state, are partition 0's)."""
        return name in self._local_names or (self._stage == 0 and name not in self._owners)

    def modules(self):
        seen = set()
        for module in self._modules:
            for sub in module.modules():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield sub


def tensor_owners(model, units, assignment):
    """The partition of each parameter and buffer name of `model`."""
    owners, partition_of = {}, {}
    for unit, index in zip(units, assignment, strict=True):
        if unit.module is None:
            continue
        for name, tensor in _named_tensors(unit.module, unit.name):
            if partition_of.setdefault(id(tensor), index) != index:
                raise ValueError(f"the tensor {name!r} is used by modules on partitions "
                                 f"{partition_of[id(tensor)]} and {index}: a tensor shared across partitions "
                                 "is not supported")
            owners[name] = index
    for name, tensor in _named_tensors(model, ""):
        owners.setdefault(name, partition_of.get(id(tensor), 0))
    return owners


def _named_tensors(module, prefix):
    yield from module.named_parameters(prefix=prefix, remove_duplicate=False)
    yield from module.named_buffers(prefix=prefix, remove_duplicate=False)


def _place(model, owners, stage, device):
    for name, param in list(model.named_parameters(remove_duplicate=False)):
        with torch.no_grad():
            param.data = param.data.to(device) if owners[name] == stage else _empty(param)
    for name, buffer in list(model.named_buffers(remove_duplicate=False)):
        holder, _, attribute = name.rpartition(".")
        kept = buffer.to(device) if owners[name] == stage else _empty(buffer)
        model.get_submodule(holder)._buffers[attribute] = kept


def _empty(tensor):
    return torch.empty(0, dtype=tensor.dtype, device=tensor.device)
