"""StepOutput: a tensor's versions over the microbatches of one smp.step call."""

import torch

from ..common.step_output import StepOutputBase


class StepOutput(StepOutputBase):
    def reduce_sum(self):
        return torch.stack(self._outputs).sum(dim=0)

    def concat(self):
        """The tensors concatenated along the batch dimension (0)."""
        return torch.cat(self._outputs, dim=0)

    def stack(self):
        return torch.stack(self._outputs)
