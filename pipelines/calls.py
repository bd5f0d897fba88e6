"""A SageMaker operation called on behalf of a pipeline execution, through the path an API
request takes after SigV4: the botocore input shape's validation, the request checks every
operation goes through (the tenancy rule on S3 locations and roles, as the execution's account),
then the operation's own handler. So a step's job is exactly the job its request would make."""

from protocol import registry
from protocol.context import RequestContext
from protocol.serialization import to_wire
from protocol.validation import validate_input

SAGEMAKER = registry.SERVICES["SageMaker"]


def call(ctx: RequestContext, operation: str, params: dict) -> dict:
    """The operation's answer as JSON values (as a client would read it); ServiceError if refused."""
    checked = validate_input(SAGEMAKER.botocore_name, operation, params)
    registry.run_request_checks(ctx, SAGEMAKER, operation, checked)
    handler = registry.handler_for(SAGEMAKER.target_prefix, operation)
    if handler is None:  # every operation a step kind names is served: a missing one is a bug
        raise LookupError(f"no handler for {operation}")
    return to_wire(handler(ctx, checked) or {})
