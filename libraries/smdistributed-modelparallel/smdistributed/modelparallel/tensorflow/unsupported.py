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


def register_post_partition_hook(hook):
    """The TensorFlow variant does not partition models, so there is no partitioning to hook."""
    raise not_implemented("smp.register_post_partition_hook")


class CheckpointManager:
    """smp.CheckpointManager (a tf.train.CheckpointManager that saves each rank's partition)."""

    def __init__(self, *args, **kwargs):
        raise not_implemented("smp.CheckpointManager")
