"""smp.CheckpointManager: tf.train.CheckpointManager for a job whose every rank holds the whole model.

SageMaker's writes each rank's partition; here every replica is the same (DistributedModel keeps
them so), so on each host one process (local rank 0) writes the checkpoint into `directory` there
and the host's other processes wait for it. SageMaker's checkpoint directory is local to each
instance (it syncs it with S3), which is why every host writes a copy: a rank restores from its
own host's directory. A directory shared between hosts would be written by each host at once.
"""

import os

import tensorflow as tf

from .comm import WORLD, barrier
from .state import state


class CheckpointManager(tf.train.CheckpointManager):
    def __init__(self, checkpoint, directory="/opt/ml/checkpoints", max_to_keep=None, checkpoint_name="ckpt"):
        super().__init__(checkpoint, directory, max_to_keep, checkpoint_name=checkpoint_name)

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """A new checkpoint in `directory` (written by each host's local rank 0; every rank
        returns once all are written); the path of its prefix."""
        path = None
        if state().local_rank == 0:
            path = super().save(checkpoint_number, check_interval=check_interval, options=options)
        barrier(WORLD)
        return path or tf.train.latest_checkpoint(self.directory)

    def restore(self, restore_prefix=None):
        """Restore the latest checkpoint of `directory`, or the one named `restore_prefix` there
        (such as "ckpt-2"), on every rank; the restore status."""
        path = (os.path.join(self.directory, restore_prefix) if restore_prefix
                else tf.train.latest_checkpoint(self.directory))
        if path is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        status = self.checkpoint.restore(path)
        barrier(WORLD)
        return status
