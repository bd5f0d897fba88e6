"""SageMaker processing jobs (issue 26): the API, their status, and the reconciler that runs them
as a kind of container job on the shared layer (jobs/): SageMaker's processing container
contract (inputs and outputs under /opt/ml/processing/, /opt/ml/config, /opt/ml/output/message)."""
