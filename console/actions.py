"""Every change the console makes is an API operation: the request it builds is validated
against the operation's botocore shape, goes through the request checks every operation goes
through (the tenancy rule on S3 locations and roles, accounts/s3_tenancy) and is given to the
handler the API registered, so the console follows the API's rules (health gate, drain,
rollback, stop grace) and has none of its own."""

from dataclasses import dataclass

from protocol import registry
from protocol.context import RequestContext
from protocol.errors import ServiceError
from protocol.validation import validate_input

SAGEMAKER = "SageMaker"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    # The operation's response members on success.
    response: dict
    # The AWS error's code and message otherwise.
    code: str = ""
    message: str = ""

    @property
    def error(self) -> str:
        return f"{self.code}: {self.message}"


def perform(ctx: RequestContext, operation: str, params: dict) -> Outcome:
    """Run one SageMaker operation as a signed request for `ctx` would."""
    service = registry.SERVICES[SAGEMAKER]
    handler = registry.handler_for(SAGEMAKER, operation)
    try:
        checked = validate_input(service.botocore_name, operation, params)
        registry.run_request_checks(ctx, service, operation, checked)
        response = handler(ctx, checked)
    except ServiceError as error:
        return Outcome(ok=False, response={}, code=error.code, message=error.message)
    return Outcome(ok=True, response=response or {})
