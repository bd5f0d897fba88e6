"""DistributedModel: the model, partitioned over its MP group and replicated over its DP group.

With partitions (P) = 1 the rank holds the whole model on its device from the start. With P > 1
the model is partitioned at the first smp.step call that runs it (SageMaker's `partitioned`
becomes True then; see partition.py for how), each rank keeps only its partition (placement.py)
and smp.step runs the microbatches through the pipeline (pipeline.py). Gradients are averaged
over the DP group, whose ranks hold the same partition, when the step ends.
"""

import functools
from collections import OrderedDict

import torch
import torch.distributed as dist
from torch.nn.modules.module import _IncompatibleKeys
from torch.utils.flop_counter import FlopCounterMode

from ..common import step_context
from . import pipeline, registry
from .partition import automatic_plan, automatic_units, manual_plan
from .placement import LocalPartition
from .state import state

PARTIAL_KEY = "_smp_is_partial"  # SageMaker's marker of a local_state_dict


class DistributedModel(torch.nn.Module):
    """Wraps a module: every replica starts from global rank 0's parameters and buffers, the
    module is partitioned when P > 1, and gradients are averaged over the DP group after each step."""

    def __init__(self, module, trace_device="gpu", trace_execution_times=False, overlapping_allreduce=True,
                 backward_passes_per_step=1, average_grads_across_microbatches=True, bucket_cap_mb=25,
                 trace_memory_usage=False, broadcast_buffers=True, gradient_as_bucket_view=False):
        """SageMaker's constructor. `overlapping_allreduce`, `bucket_cap_mb` and
        `gradient_as_bucket_view` only tune DDP's speed and change no result: the all-reduce runs
        when the step ends. `trace_device` is accepted: the FLOPs of the automatic partition are
        measured where the module is. Options whose behaviour is not built raise NotImplementedError."""
        _check_options(trace_device, trace_execution_times, backward_passes_per_step, trace_memory_usage)
        super().__init__()
        current = state()
        self._average_microbatches = bool(average_grads_across_microbatches)
        self._broadcast_buffers = bool(broadcast_buffers)
        self._pipelined = current.config.partitions > 1
        # with P > 1 the module moves to the device at the partition, and only this rank's part of it
        self.module = module if self._pipelined else module.to(current.device)
        self._local = None  # this rank's LocalPartition once partitioned (P > 1)
        self._partitioned = False
        with torch.no_grad():
            for tensor in [*self.module.parameters(), *self.module.buffers()]:
                group = current.world.collective if tensor.device.type == "cuda" else current.world.objects
                dist.broadcast(tensor, src=0, group=group)
        registry.register_model(self)

    @property
    def partitioned(self):
        """False until the first smp.step call ran the model (SageMaker's property)."""
        return self._partitioned

    def forward(self, *args, **kwargs):
        if not self._pipelined:
            if step_context.current() is not None:
                self._partitioned = True
            return self.module(*args, **kwargs)
        microbatch = pipeline.current_microbatch()
        if microbatch is None:
            raise RuntimeError("with partitions > 1 the DistributedModel must be called inside an smp.step "
                               "function")
        return microbatch.coroutine.pause(pipeline.ForwardRequest(self, args, kwargs))

    def gradient_divisor(self, microbatches):
        """What each microbatch's loss is divided by: the number of microbatches, so that the step's
        accumulated gradient is the batch's mean, unless average_grads_across_microbatches=False."""
        return microbatches if self._average_microbatches else 1

    def backward(self, tensors, grad_tensors=None):
        """Back-propagate one microbatch's loss (as torch.autograd.backward(tensors, grad_tensors)),
        divided by gradient_divisor()."""
        context = step_context.current()
        if context is None:
            raise RuntimeError("model.backward(loss) must be called inside an smp.step function")
        context.used(self)
        if self._pipelined:
            microbatch = pipeline.current_microbatch()
            if microbatch is None:
                raise RuntimeError("model.backward(loss) must be called inside an smp.step function")
            microbatch.coroutine.pause(pipeline.BackwardRequest(self, tensors, grad_tensors))
            return
        pipeline.divided_backward(tensors, grad_tensors, self.gradient_divisor(context.microbatches))

    # ---- partitioning (P > 1) ----

    def partition_for(self, args, kwargs):
        """Partition the model before its first forward pass, whose arguments are given (used to
        measure the units' FLOPs for the automatic partition); every rank calls it then."""
        if self._partitioned:
            return
        config, current = state().config, state()
        if config.auto_partition:
            units, reasons = automatic_units(self.module)
            measure = config.memory_weight < 1 and len(units) >= config.partitions
            flops = _flops_from_rank0(units, args, kwargs) if measure else None
            assignment = automatic_plan(units, reasons, config.partitions, config.memory_weight, flops)
        else:
            units, assignment = manual_plan(self.module, config.partitions, config.default_partition)
        self._local = LocalPartition(self.module, units, assignment, current.mp_rank, current.device)
        self._partitioned = True

    def run_stage(self, args, kwargs):
        return self._local.run(args, kwargs)

    # ---- what this rank holds ----

    def local_modules(self):
        """The modules of this rank's partition (the whole model before the partition or with P = 1)."""
        return self._local.modules() if self._local else self.module.modules()

    def local_named_modules(self):
        local = {id(m) for m in self.local_modules()}
        return ((name, m) for name, m in self.module.named_modules() if id(m) in local)

    def local_named_parameters(self):
        return ((name, p) for name, p in self.module.named_parameters() if self._is_local(name))

    def local_parameters(self):
        return (p for _, p in self.local_named_parameters())

    def local_named_buffers(self):
        return ((name, b) for name, b in self.module.named_buffers() if self._is_local(name))

    def local_buffers(self):
        return (b for _, b in self.local_named_buffers())

    def _is_local(self, name):
        return self._local is None or self._local.owns(name)

    def finish_step(self):
        """Average the accumulated gradients of this rank's parameters over the DP group (called
        when the step ends)."""
        current = state()
        replicas = len(current.dp.ranks)
        if replicas == 1:
            return
        for param in self.local_parameters():
            if not param.requires_grad:
                continue
            if param.grad is None:  # every replica must join every all-reduce
                param.grad = torch.zeros_like(param)
            dist.all_reduce(param.grad, group=current.dp.collective)
            param.grad.div_(replicas)
        if self._broadcast_buffers:  # as DDP: the replicas' buffers (BatchNorm statistics) are DP rank 0's
            with torch.no_grad():
                for buffer in self.local_buffers():
                    dist.broadcast(buffer, src=current.dp.ranks[0], group=current.dp.collective)

    # ---- state dicts ----

    def local_state_dict(self, *args, **kwargs):
        """This rank's parameters and buffers, marked partial (SageMaker's `_smp_is_partial`)."""
        entries = self.module.state_dict(*args, **kwargs).items()
        local = OrderedDict((k, v) for k, v in entries if self._is_local(k))
        local[PARTIAL_KEY] = True
        return local

    def state_dict(self, *args, **kwargs):
        """The whole model's state dict, gathered from the MP group's ranks (each must call it)."""
        if self._local is None:
            return self.module.state_dict(*args, **kwargs)
        full = self.module.state_dict(*args, **kwargs)
        merged = _merge(_gather_mp(_cpu(self.local_state_dict(*args, **kwargs))))
        return OrderedDict((key, merged[key]) for key in full)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Load a full state dict, or a partial one (every MP rank passes its own, as smp.load
        returns them; they are gathered); this rank loads the entries of its own partition."""
        if state_dict.get(PARTIAL_KEY):
            state_dict = _merge(_gather_mp(_cpu(state_dict)))
        state_dict = OrderedDict((k, v) for k, v in state_dict.items() if k != PARTIAL_KEY)
        if self._local is None:
            return self.module.load_state_dict(state_dict, strict=strict, assign=assign)
        expected = self.module.state_dict().keys()
        missing = [k for k in expected if k not in state_dict]
        unexpected = [k for k in state_dict if k not in expected]
        if strict and (missing or unexpected):
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self.module).__name__}: "
                               f"missing keys {missing}, unexpected keys {unexpected}")
        local = OrderedDict((k, v) for k, v in state_dict.items() if k in expected and self._is_local(k))
        self.module.load_state_dict(local, strict=False, assign=assign)
        return _IncompatibleKeys(missing, unexpected)


def _check_options(trace_device, trace_execution_times, backward_passes_per_step, trace_memory_usage):
    if trace_device not in ("cpu", "gpu"):
        raise ValueError(f"trace_device must be 'cpu' or 'gpu', got {trace_device!r}")
    unbuilt = {"trace_execution_times=True (the automatic partition weighs FLOPs)": trace_execution_times,
               "trace_memory_usage=True (the automatic partition weighs parameter sizes)": trace_memory_usage,
               f"backward_passes_per_step={backward_passes_per_step}": backward_passes_per_step != 1}
    for option, given in unbuilt.items():
        if given:
            raise NotImplementedError(f"smp.DistributedModel({option}) is not implemented by this library")


def _flops_from_rank0(units, args, kwargs):
    """Each unit's forward FLOPs on the first microbatch, measured by global rank 0 (the whole
    model is still on every rank) and sent to all, so that every rank makes the same plan."""
    measured = [None]
    if state().rank == 0:
        try:
            measured[0] = _measure_flops(units, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - every rank must learn that the partition failed
            measured[0] = RuntimeError(f"measuring the model's forward pass for the partition failed: "
                                       f"{exc!r}")
    dist.broadcast_object_list(measured, src=0, group=state().world.objects)
    if isinstance(measured[0], Exception):
        raise measured[0]
    return measured[0]


def _measure_flops(units, args, kwargs):
    device = next((p.device for u in units if u.module is not None for p in u.module.parameters()), None)
    if device is not None:
        args, kwargs = torch.utils._pytree.tree_map(
            lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, (args, kwargs))
    flops, step = {}, (lambda unit: unit.run(*args, **kwargs))
    with torch.no_grad():
        for unit in units:
            with FlopCounterMode(display=False) as counter:
                value = step(unit)
            flops[unit.name] = counter.get_total_flops()
            step = functools.partial(_run_on, value)
    return flops


def _run_on(value, unit):
    return unit.run(value)


def _gather_mp(obj):
    gathered = [None] * len(state().mp.ranks)
    dist.all_gather_object(gathered, obj, group=state().mp.objects)
    return gathered


def _merge(partials):
    merged = OrderedDict()
    for partial in partials:
        merged.update((k, v) for k, v in partial.items() if k != PARTIAL_KEY)
    return merged


def _cpu(state_dict):
    return OrderedDict((k, v.cpu() if isinstance(v, torch.Tensor) else v) for k, v in state_dict.items())

