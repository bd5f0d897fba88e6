"""Every change the console makes is an API operation: the request it builds is validated
against the operation's botocore shape and given to the handler the API registered, so the
console follows the API's rules (health gate, drain, rollback, stop grace) and has none of its own."""

from dataclasses import dataclass

from protocol import registry
from protocol.context import RequestContext
from protocol.errors import ServiceError
from protocol.validation import validate_input

SAGEMAKER = "SageMaker"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    # The operation's response members on success; the AWS error's code and message otherwise.
    response: dict
    error: str = ""


def perform(ctx: RequestContext, operation: str, params: dict) -> Outcome:
    """Run one SageMaker operation as a signed request for `ctx` would."""
    service = registry.SERVICES[SAGEMAKER]
    handler = registry.handler_for(SAGEMAKER, operation)
    try:
        response = handler(ctx, validate_input(service.botocore_name, operation, params))
    except ServiceError as error:
        return Outcome(ok=False, response={}, error=f"{error.code}: {error.message}")
    return Outcome(ok=True, response=response or {})
