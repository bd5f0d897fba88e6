"""Training jobs, the whole feature: models (app label "jobs"), the API (requests, services,
presenters, operations), the reconciler and its steps (containers, workspace, artifacts,
metrics, phase deadlines: training's side of the shared container-job layer, jobs/), the
scheduler that places jobs on nodes, the Celery tasks, and data/ (helper processes that feed and
sync a job's files). May import: jobs, gateway, clusters, logs, capacity, accounts, reconcile,
runtime, storage, protocol; never hosting."""
