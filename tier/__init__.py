"""The in-memory checkpoint tier: `python -m tier`, one per node of a tier-enabled cluster, the
service AWS's `amzn-sagemaker-checkpointing` library talks to (docs/architecture.md, "The
checkpoint tier")."""
