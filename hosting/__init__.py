"""Hosting, the whole feature: models, endpoint configs and endpoints (app label "endpoints"), the
API, the endpoint reconciler and its steps (containers, GPUs, health, rollout, model data), the
Celery tasks, and runtime_api/ (the InvokeEndpoint data path). May import: logs, capacity,
accounts, reconcile, runtime, storage, protocol; never training."""
