"""smp.patches.checkpoint: activation checkpointing, not implemented here."""

from ..unsupported import function

checkpoint = function("smp.patches.checkpoint.checkpoint", "activation checkpointing")
checkpoint_sequential = function("smp.patches.checkpoint.checkpoint_sequential", "activation checkpointing")
