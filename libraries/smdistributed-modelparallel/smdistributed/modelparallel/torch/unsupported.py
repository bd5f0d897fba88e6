"""The parts of SageMaker's v1 PyTorch API this library does not build: calling one raises
NotImplementedError naming it, so that a script never runs on as if it had taken effect."""

import torch


def fail(api, feature):
    raise NotImplementedError(
        f"{api} ({feature}) is not implemented by Sageport's smdistributed.modelparallel")


def function(api, feature):
    """A function that raises for any arguments."""

    def unsupported(*args, **kwargs):
        fail(api, feature)

    unsupported.__name__ = unsupported.__qualname__ = api.rsplit(".", 1)[-1]
    unsupported.__doc__ = f"Not implemented: {feature}. Raises NotImplementedError."
    return unsupported


def module_class(api, feature):
    """An nn.Module class that cannot be created (isinstance checks against it still work)."""

    def __init__(self, *args, **kwargs):
        fail(api, feature)

    name = api.rsplit(".", 1)[-1]
    return type(name, (torch.nn.Module,), {"__init__": __init__, "__doc__": f"Not implemented: {feature}."})


def optimizer_class(api, feature):
    def __init__(self, *args, **kwargs):
        fail(api, feature)

    name = api.rsplit(".", 1)[-1]
    namespace = {"__init__": __init__, "__doc__": f"Not implemented: {feature}."}
    return type(name, (torch.optim.Optimizer,), namespace)
