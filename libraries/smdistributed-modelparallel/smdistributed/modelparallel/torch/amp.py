"""smp.amp.GradScaler: torch's GradScaler, with the inf/nan check agreed by every rank.

Each rank unscales only the gradients of its own partition, so one stage can overflow while the
others do not. Skipping the step on that stage alone would leave the stages of one model at
different steps, and replicas with different scales: the found-inf flag is all-reduced (max) over
the world, which is every MP and DP group of the job, before step() decides and update() scales.
"""

import torch
import torch.distributed as dist

from .state import state


class GradScaler(torch.amp.GradScaler):
    def __init__(self, device=None, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        """`device` defaults to this process's device type ("cuda" under NCCL, "cpu" on gloo)."""
        super().__init__(device or state().device.type, init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    def unscale_(self, optimizer):
        super().unscale_(optimizer)
        if not self.is_enabled():
            return
        per_device = self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
        current = state()
        found = torch.zeros((), dtype=torch.float32, device=current.device)
        for flag in per_device.values():
            found = torch.maximum(found, flag.to(current.device))
        dist.all_reduce(found, op=dist.ReduceOp.MAX, group=current.world.collective)
        # A rank whose partition has no gradients recorded no flag; it takes the job's.
        per_device.clear()
        per_device[current.device] = found.to(self._scale.device)
