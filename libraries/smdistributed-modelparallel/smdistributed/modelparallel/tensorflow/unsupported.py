"""The parts of SageMaker's v1 TensorFlow API that this library does not build: calling them
raises NotImplementedError naming them, rather than silently doing nothing (the distribution's
README says why)."""


def not_implemented(name):
    return NotImplementedError(
        f"smdistributed.modelparallel.tensorflow: {name} is not implemented by Sageport's model-parallel "
        "library (the TensorFlow variant trains data-parallel only; see its README)"
    )


def partition(index):
    """Manual partitioning (smp.partition): the TensorFlow variant does not partition models."""
    raise not_implemented("smp.partition")

