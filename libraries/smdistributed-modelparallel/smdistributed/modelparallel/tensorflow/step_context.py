"""Whether an smp.step function is being traced, and with how many microbatches."""

import contextlib

_current = None


class StepContext:
    def __init__(self, microbatches):
        self.microbatches = microbatches


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
    finally:
        _current = None
