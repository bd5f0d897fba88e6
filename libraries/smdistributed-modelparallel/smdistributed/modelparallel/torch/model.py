"""DistributedModel: data parallelism over the DP group.

Every process holds the whole model (nothing is partitioned; see the README), so the processes
of an MP group, which receive the same data, compute the same gradients, and the DP group
averages them.
"""

import torch
import torch.distributed as dist

from . import registry, step_context
from .state import state


class DistributedModel(torch.nn.Module):
    """Wraps a module: places it on this process's device, makes every replica start from
    rank 0's parameters and buffers, and averages gradients over the DP group after each step."""

    def __init__(self, module):
        super().__init__()
        current = state()
        self.module = module.to(current.device)
        with torch.no_grad():
            for tensor in [*self.module.parameters(), *self.module.buffers()]:
                dist.broadcast(tensor, src=0, group=current.world.collective)
        registry.register_model(self)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def backward(self, loss):
        """Back-propagate one microbatch's loss, scaled so that the gradients accumulated over
        the step's microbatches are their mean: the full batch's gradient for a mean loss."""
        context = step_context.current()
        if context is None:
            raise RuntimeError("model.backward(loss) must be called inside an smp.step function")
        context.used(self)
        (loss / context.microbatches).backward()

    def finish_step(self):
        """Average the accumulated gradients over the DP group (called when the step ends)."""
        current = state()
        replicas = len(current.dp.ranks)
        if replicas == 1:
            return
        for param in self.module.parameters():
            if not param.requires_grad:
                continue
            if param.grad is None:  # every replica must join every all-reduce
                param.grad = torch.zeros_like(param)
            dist.all_reduce(param.grad, group=current.dp.collective)
            param.grad.div_(replicas)

    def state_dict(self, *args, **kwargs):
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        return self.module.load_state_dict(state_dict, strict=strict, assign=assign)

