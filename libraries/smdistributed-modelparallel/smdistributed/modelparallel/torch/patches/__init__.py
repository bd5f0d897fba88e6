"""smp.patches: SageMaker's activation checkpointing functions (patches.checkpoint)."""

from . import checkpoint

__all__ = ["checkpoint"]
