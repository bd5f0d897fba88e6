"""The DistributedModels of this process. SageMaker's DistributedOptimizer is given only the torch
optimizer, so it finds here which of that optimizer's parameters are local to this rank."""

import weakref

_models = weakref.WeakSet()


def register(model):
    _models.add(model)


def registered():
    return list(_models)
