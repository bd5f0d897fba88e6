"""SageMaker Model Building Pipelines: definitions, executions run as a DAG of ordinary jobs."""
