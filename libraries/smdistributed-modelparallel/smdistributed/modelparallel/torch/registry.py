"""The DistributedModels and DistributedOptimizers of this process, in creation order. SageMaker's
DistributedOptimizer is given only the torch optimizer, so it finds here which of that optimizer's
parameters are local to this rank; smp.resume_from_checkpoint loads into the latest of each (a
SageMaker script has one of each)."""

import weakref

_models = []
_optimizers = []


def register_model(model):
    _models.append(weakref.ref(model))


def models():
    return _alive(_models)


def register_optimizer(optimizer):
    _optimizers.append(weakref.ref(optimizer))


def optimizers():
    return _alive(_optimizers)


def _alive(references):
    references[:] = [r for r in references if r() is not None]
    return [r() for r in references]
