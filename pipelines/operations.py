"""SageMaker Model Building Pipelines operations: validate (the shape already is, by the protocol
layer), delegate."""

from pipelines import presenters, services
from protocol.context import RequestContext
from protocol.registry import operation


@operation("CreatePipeline")
def create_pipeline(ctx: RequestContext, params: dict) -> dict:
    return {"PipelineArn": services.create_pipeline(ctx, params).arn}


@operation("DescribePipeline")
def describe_pipeline(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_pipeline(services.get_pipeline(ctx, params["PipelineName"]))


@operation("UpdatePipeline")
def update_pipeline(ctx: RequestContext, params: dict) -> dict:
    return {"PipelineArn": services.update_pipeline(ctx, params).arn}


@operation("DeletePipeline")
def delete_pipeline(ctx: RequestContext, params: dict) -> dict:
    return {"PipelineArn": services.delete_pipeline(ctx, params["PipelineName"])}


@operation("ListPipelines")
def list_pipelines(ctx: RequestContext, params: dict) -> dict:
    found, next_token = services.list_pipelines(ctx, params)
    return {"PipelineSummaries": [presenters.pipeline_summary(row) for row in found], "NextToken": next_token}


@operation("StartPipelineExecution")
def start_pipeline_execution(ctx: RequestContext, params: dict) -> dict:
    return {"PipelineExecutionArn": services.start_execution(ctx, params).arn}


@operation("DescribePipelineExecution")
def describe_pipeline_execution(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_execution(services.get_execution(ctx, params["PipelineExecutionArn"]))


@operation("DescribePipelineDefinitionForExecution")
def describe_pipeline_definition_for_execution(ctx: RequestContext, params: dict) -> dict:
    execution = services.get_execution(ctx, params["PipelineExecutionArn"])
    return {"PipelineDefinition": execution.definition, "CreationTime": execution.creation_time}


@operation("StopPipelineExecution")
def stop_pipeline_execution(ctx: RequestContext, params: dict) -> dict:
    return {"PipelineExecutionArn": services.stop_execution(ctx, params["PipelineExecutionArn"]).arn}


@operation("RetryPipelineExecution")
def retry_pipeline_execution(ctx: RequestContext, params: dict) -> dict:
    return {"PipelineExecutionArn": services.retry_execution(ctx, params).arn}


@operation("ListPipelineExecutions")
def list_pipeline_executions(ctx: RequestContext, params: dict) -> dict:
    found, next_token = services.list_executions(ctx, params)
    return {
        "PipelineExecutionSummaries": [presenters.execution_summary(row) for row in found],
        "NextToken": next_token,
    }


@operation("ListPipelineExecutionSteps")
def list_pipeline_execution_steps(ctx: RequestContext, params: dict) -> dict:
    found, next_token = services.list_steps(ctx, params)
    return {
        "PipelineExecutionSteps": [presenters.execution_step(row) for row in found],
        "NextToken": next_token,
    }


@operation("ListPipelineParametersForExecution")
def list_pipeline_parameters_for_execution(ctx: RequestContext, params: dict) -> dict:
    found, next_token = services.list_parameters(ctx, params)
    return {"PipelineParameters": found, "NextToken": next_token}
