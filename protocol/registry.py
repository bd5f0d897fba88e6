"""Explicit registry of operation handlers, keyed by (target prefix, operation name).

Apps register with `@operation("CreateTrainingJob")` (target prefix `SageMaker` by default),
`@operation("GetLogEvents", service="Logs_20140328")` or
`@operation("ListMetrics", service=CLOUDWATCH)` (likewise `STS`, `IAM`). A handler is called as
`handler(ctx: RequestContext, params: dict) -> dict` with params already validated against the
botocore input shape; it returns the response members (None values are dropped on the wire).
"""
from collections.abc import Callable
from dataclasses import dataclass

from protocol.context import RequestContext
from protocol.errors import (
    InvalidParameterException,
    QueryValidationError,
    ServiceError,
    ValidationException,
)

Handler = Callable[[RequestContext, dict], dict | None]


@dataclass(frozen=True)
class Service:
    """A service served over AWS JSON: its X-Amz-Target prefix and its botocore model coordinates
    (the model also says whether the service speaks the query protocol and its error codes)."""

    target_prefix: str
    botocore_name: str  # e.g. "sagemaker", "logs"
    # The error this service answers for a request that breaks its input shape or rules.
    invalid_input: type[ServiceError] = ValidationException


CLOUDWATCH = "GraniteServiceVersion20100801"
# Query-only services: their Smithy service names, the prefix a JSON target would carry.
STS = "AWSSecurityTokenServiceV20110615"
IAM = "AWSIdentityManagementV20100508"
SERVICES: dict[str, Service] = {
    "SageMaker": Service("SageMaker", "sagemaker"),
    "Logs_20140328": Service("Logs_20140328", "logs", invalid_input=InvalidParameterException),
    CLOUDWATCH: Service(CLOUDWATCH, "cloudwatch", invalid_input=QueryValidationError),
    STS: Service(STS, "sts", invalid_input=QueryValidationError),
    IAM: Service(IAM, "iam", invalid_input=QueryValidationError),
}

_handlers: dict[tuple[str, str], Handler] = {}

# Checks every request goes through after validation and before its handler, whatever the
# operation: rules no feature may forget (the tenancy rule on S3 locations, accounts/s3_tenancy).
# A check raises a ServiceError to refuse the request.
RequestCheck = Callable[[RequestContext, str, str, dict], None]  # (ctx, botocore name, operation, params)
_request_checks: list[RequestCheck] = []


def operation(name: str, service: str = "SageMaker") -> Callable[[Handler], Handler]:
    if service not in SERVICES:
        raise ValueError(f"unknown service prefix {service!r}")

    def register(fn: Handler) -> Handler:
        key = (service, name)
        if key in _handlers:
            raise ValueError(f"operation {service}.{name} registered twice")
        _handlers[key] = fn
        return fn

    return register


def handler_for(service: str, name: str) -> Handler | None:
    return _handlers.get((service, name))


def add_request_check(check: RequestCheck) -> None:
    if check not in _request_checks:
        _request_checks.append(check)


def run_request_checks(ctx: RequestContext, service: Service, operation: str, params: dict) -> None:
    for check in _request_checks:
        check(ctx, service.botocore_name, operation, params)
