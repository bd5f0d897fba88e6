"""StepOutput: a tensor's versions over the microbatches of one smp.step call."""

import torch


class StepOutput:
    def __init__(self, outputs):
        self._outputs = list(outputs)

    @property
    def outputs(self):
        """The tensors, indexed by microbatch."""
        return self._outputs

    def reduce_mean(self):
        return self.reduce_sum() / len(self._outputs)

    def reduce_sum(self):
        return torch.stack(self._outputs).sum(dim=0)

    def concat(self):
        """The tensors concatenated along the batch dimension (0)."""
        return torch.cat(self._outputs, dim=0)

    def stack(self):
        return torch.stack(self._outputs)

    def __repr__(self):
        return f"StepOutput({self._outputs!r})"
