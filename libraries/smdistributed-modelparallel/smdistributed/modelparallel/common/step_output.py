"""What every framework's StepOutput shares: a tensor's versions over the microbatches of one
smp.step call, and their mean; each variant sums, concatenates and stacks with its own ops."""


class StepOutputBase:
    """A variant's StepOutput adds reduce_sum(), concat() and stack()."""

    def __init__(self, outputs):
        self._outputs = list(outputs)

    @property
    def outputs(self):
        """The tensors, indexed by microbatch."""
        return self._outputs

    def reduce_mean(self):
        return self.reduce_sum() / len(self._outputs)

    def __repr__(self):
        return f"StepOutput({self._outputs!r})"
