"""Response bodies for pipelines and their executions, built explicitly from the rows."""

from pipelines.models import Pipeline, PipelineExecution, PipelineExecutionStep


def describe_pipeline(pipeline: Pipeline) -> dict:
    return {
        "PipelineArn": pipeline.arn,
        "PipelineName": pipeline.name,
        "PipelineDisplayName": pipeline.display_name,
        "PipelineDefinition": pipeline.definition,
        "PipelineDescription": pipeline.description or None,
        "RoleArn": pipeline.role_arn,
        "PipelineStatus": "Active",
        "CreationTime": pipeline.creation_time,
        "LastModifiedTime": pipeline.last_modified_time,
        "LastRunTime": pipeline.last_run_time,
        "ParallelismConfiguration": pipeline.parallelism_configuration,
    }


def pipeline_summary(pipeline: Pipeline) -> dict:
    return {
        "PipelineArn": pipeline.arn,
        "PipelineName": pipeline.name,
        "PipelineDisplayName": pipeline.display_name,
        "PipelineDescription": pipeline.description or None,
        "RoleArn": pipeline.role_arn,
        "CreationTime": pipeline.creation_time,
        "LastModifiedTime": pipeline.last_modified_time,
        "LastExecutionTime": pipeline.last_run_time,
    }


def describe_execution(execution: PipelineExecution) -> dict:
    return {
        "PipelineArn": execution.pipeline.arn,
        "PipelineExecutionArn": execution.arn,
        "PipelineExecutionDisplayName": execution.display_name,
        "PipelineExecutionStatus": execution.status,
        "PipelineExecutionDescription": execution.description or None,
        "PipelineExperimentConfig": None,
        "FailureReason": execution.failure_reason or None,
        "CreationTime": execution.creation_time,
        "LastModifiedTime": execution.last_modified_time,
        "ParallelismConfiguration": execution.parallelism_configuration,
        "RoleArn": execution.role_arn,
    }


def execution_summary(execution: PipelineExecution) -> dict:
    return {
        "PipelineExecutionArn": execution.arn,
        "StartTime": execution.creation_time,
        "PipelineExecutionStatus": execution.status,
        "PipelineExecutionDescription": execution.description or None,
        "PipelineExecutionDisplayName": execution.display_name,
        "PipelineExecutionFailureReason": execution.failure_reason or None,
    }


def execution_step(row: PipelineExecutionStep) -> dict:
    cache_hit = (
        {"SourcePipelineExecutionArn": row.cache_source_execution_arn}
        if row.cache_source_execution_arn
        else None
    )
    return {
        "StepName": row.step_name,
        "StartTime": row.start_time,
        "EndTime": row.end_time,
        "StepStatus": row.status,
        "FailureReason": row.failure_reason[:1024] or None,
        "Metadata": row.metadata,
        "AttemptCount": row.attempt_count,
        "CacheHitResult": cache_hit,
    }
