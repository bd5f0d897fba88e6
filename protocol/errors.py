"""Errors that travel to the client in AWS's wire format.

Every error a handler raises is a ServiceError: a code (the `__type`), an HTTP status and a
message. Codes and statuses follow what botocore's service models and the real service use
(e.g. `ValidationException` 400, signature errors 403, `InternalFailure` 500). Use 5xx only for
genuinely transient faults: clients retry them."""


class ServiceError(Exception):
    code = "InternalFailure"
    status = 500

    def __init__(self, message: str = "", *, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        # Additional modeled members serialized beside `Message` (e.g. ModelError's fields).
        self.extra = extra or {}


class ValidationException(ServiceError):
    code = "ValidationException"
    status = 400


class ResourceInUse(ServiceError):
    code = "ResourceInUse"
    status = 400


    status = 400


class ResourceNotFound(ServiceError):
    """SageMaker's unknown resource for the operations that model it (e.g. DescribeCluster)."""

    code = "ResourceNotFound"
    status = 400


class ConflictException(ServiceError):
    """SageMaker's change refused because of the resource's current state (e.g. UpdateCluster)."""

    code = "ConflictException"
    status = 400


class InvalidParameterException(ServiceError):
    """CloudWatch Logs' name for a bad request, including what SageMaker calls ValidationException."""

    code = "InvalidParameterException"
    status = 400


class ResourceNotFoundException(ServiceError):
    """CloudWatch Logs' unknown log group or stream (SageMaker's is `ResourceNotFound`)."""

    code = "ResourceNotFoundException"
    status = 400


class UnknownOperationException(ServiceError):
    code = "UnknownOperationException"
    status = 400


class NotImplementedOperation(ServiceError):
    """A real SageMaker operation that Sageport does not implement. Never a fake success."""

    code = "NotImplementedException"
    status = 501


class SerializationException(ServiceError):
    code = "SerializationException"
    status = 400


class RequestEntityTooLarge(ServiceError):
    """A body over the API's size limit (the code and status AWS Lambda answers for one)."""

    code = "RequestEntityTooLargeException"
    status = 413


class MissingAuthenticationToken(ServiceError):
    code = "MissingAuthenticationTokenException"
    status = 403


class IncompleteSignature(ServiceError):
    code = "IncompleteSignatureException"
    status = 403


class UnrecognizedClient(ServiceError):
    code = "UnrecognizedClientException"
    status = 403


class ExpiredToken(ServiceError):
    """Temporary credentials (STS's) past their expiry: the code and status of STS's model, which
    botocore's credential refresh also recognises."""

    code = "ExpiredTokenException"
    status = 400


class InvalidSignature(ServiceError):
    code = "InvalidSignatureException"
    status = 403


class AccessDenied(ServiceError):
    code = "AccessDeniedException"
    status = 403


class ServiceUnavailable(ServiceError):
    """A dependency the request needs did not answer: AWS's common error, worth a retry (botocore
    retries it)."""

    code = "ServiceUnavailable"
    status = 503


class InternalFailure(ServiceError):
    code = "InternalFailure"
    status = 500


# CloudWatch (metrics) speaks the query protocol's error codes on every protocol: botocore reads
# them from the JSON answer's `x-amzn-query-error` header (the model's awsQueryCompatible trait).


class QueryValidationError(ServiceError):
    """A request that breaks the input shape of a service from the query protocol (CloudWatch,
    STS, IAM): their `ValidationError`."""

    code = "ValidationError"
    status = 400


class InvalidParameterValue(ServiceError):
    code = "InvalidParameterValue"
    status = 400


class InvalidParameterCombination(ServiceError):
    code = "InvalidParameterCombination"
    status = 400


class InvalidNextToken(ServiceError):
    code = "InvalidNextToken"
    status = 400
