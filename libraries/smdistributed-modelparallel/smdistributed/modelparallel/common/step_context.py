"""Whether an smp.step call is running, with how many microbatches, and which models ran backward
inside it (the torch variant's DistributedModels record themselves, to finish their step when it
ends; the TensorFlow variant's DistributedModel averages gradients within its call, so none do)."""

import contextlib

_current = None


class StepContext:
    def __init__(self, microbatches):
        self.microbatches = microbatches
        self.models = []  # DistributedModels that ran backward in this step, in first-use order

    def used(self, model):
        if not any(m is model for m in self.models):
            self.models.append(model)


def current():
    return _current


@contextlib.contextmanager
def running(microbatches):
    global _current
    if _current is not None:
        raise RuntimeError("smp.step functions cannot be nested")
    _current = StepContext(microbatches)
    try:
        yield _current
        for model in _current.models:
            model.finish_step()
    finally:
        _current = None
