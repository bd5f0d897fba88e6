"""Batch transform jobs: CreateTransformJob and the rest of its API, and the run of a job on the
shared container-job layer (jobs/), the model's serving containers (hosting) and the data path's
rules (transform/)."""
