"""InvokeEndpointAsync (`POST [<prefix>/]endpoints/<name>/async-invocations`, REST-JSON), on the
data plane's port and the API's: validate the headers against the botocore shape, check the
endpoint (InService, with an AsyncInferenceConfig) and the input's bucket (the caller's account:
accounts/s3_tenancy.py), then commit the request to the endpoint's queue (hosting/async_queue.py)
and answer 202 with the InferenceId and the locations its output or failure will be written to.
Nothing is read from S3 here: a missing input fails the request into its failure location, as
any error met while processing it. A worker is asked to drain the queue after the commit; if the
broker cannot take the message, the sweeper finds the work (hosting/async_tasks.py)."""

import json
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kombu.exceptions import OperationalError

from accounts import s3_tenancy
from hosting import async_queue, async_tasks
from hosting.models import Endpoint
from hosting.runtime_api.contract import ValidationError
from hosting.runtime_api.routing import ROUTABLE_ENDPOINT_STATUSES
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ValidationException
from protocol.shapes import operation_model
from protocol.validation import validate_input
from storage.s3 import StorageError

log = logging.getLogger(__name__)

OPERATION = "InvokeEndpointAsync"
PATH = re.compile(r"^(?:.*/)?endpoints/(?P<endpoint_name>[^/]+)/async-invocations$")
# What the container receives, from the request member that carries it.
CONTAINER_HEADERS = {
    "ContentType": "Content-Type",
    "Accept": "Accept",
    "CustomAttributes": "X-Amzn-SageMaker-Custom-Attributes",
    "InferenceId": "X-Amzn-SageMaker-Inference-Id",
}


# Members that would change where the output goes, which Sageport does not carry out.
UNSUPPORTED_MEMBERS = ("S3OutputPathExtension", "Filename")


@dataclass(frozen=True)
class Accepted:
    inference_id: str
    output_location: str
    failure_location: str

    def body(self) -> bytes:
        return json.dumps({"InferenceId": self.inference_id}).encode()

    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "X-Amzn-SageMaker-OutputLocation": self.output_location,
            "X-Amzn-SageMaker-FailureLocation": self.failure_location,
        }


def _header_members() -> dict[str, tuple[str, str]]:
    """{lower-case header: (member, type)} of InvokeEndpointAsync's input, from the botocore model."""
    shape = operation_model("sagemaker-runtime", OPERATION).input_shape
    return {
        member.serialization["name"].lower(): (name, member.type_name)
        for name, member in shape.members.items()
        if member.serialization.get("location") == "header"
    }


_MEMBERS = _header_members()
SIGNED_HEADERS = tuple(_MEMBERS)  # every header acted on must be signed


def params(endpoint_name: str, headers: Mapping[str, str]) -> dict:
    """The request's members (`headers` by lower-case name), validated; a ValidationError names
    what is wrong. InputLocation is required, as SageMaker requires it."""
    found: dict = {"EndpointName": endpoint_name}
    for header, (member, type_name) in _MEMBERS.items():
        value = headers.get(header)
        if value:
            found[member] = _integer(member, value) if type_name == "integer" else value
    try:
        validated = validate_input("sagemaker-runtime", OPERATION, found)
    except ValidationException as error:
        raise ValidationError(error.message) from None
    if "InputLocation" not in validated:
        raise ValidationError("InputLocation is required: the S3 URI of the request's payload.")
    refused = [member for member in UNSUPPORTED_MEMBERS if member in validated]
    if refused:
        raise ValidationError(
            f"{' and '.join(refused)} not supported by Sageport: outputs are named by InferenceId."
        )
    return validated


def _integer(member: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValidationError(f"{member} must be an integer, not {value[:32]!r}.") from None


def invoke(ctx: RequestContext, endpoint_name: str, headers: Mapping[str, str]) -> Accepted:
    """Check and enqueue the request (runs in a thread on the data plane: it queries the database)."""
    request = params(endpoint_name, headers)
    endpoint = _async_endpoint(ctx, endpoint_name)
    config = async_queue.endpoint_async_config(endpoint)
    _check_input(ctx, request["InputLocation"])
    request.setdefault("InferenceId", str(uuid.uuid4()))
    request["Headers"] = {
        header: request[member] for member, header in CONTAINER_HEADERS.items() if member in request
    }
    row = async_queue.accept(endpoint, config, request)
    _nudge(endpoint.pk)
    return Accepted(row.inference_id, row.output_location, row.failure_location)


def _async_endpoint(ctx: RequestContext, endpoint_name: str) -> Endpoint:
    arn = make_arn(ctx.region, ctx.account_id, "endpoint", endpoint_name)
    endpoint = Endpoint.objects.filter(endpoint_arn=arn).first()
    if endpoint is None:
        raise ValidationError(f"Endpoint {endpoint_name} of account {ctx.account_id} not found.")
    if endpoint.endpoint_status not in ROUTABLE_ENDPOINT_STATUSES:
        raise ValidationError(
            f"Endpoint {endpoint_name} of account {ctx.account_id} is not InService "
            f"(status: {endpoint.endpoint_status})."
        )
    if async_queue.endpoint_async_config(endpoint) is None:
        raise ValidationError(
            f"Endpoint {endpoint_name} of account {ctx.account_id} is not an asynchronous endpoint: its "
            "endpoint config has no AsyncInferenceConfig. Use InvokeEndpoint."
        )
    return endpoint


def _check_input(ctx: RequestContext, uri: str) -> None:
    try:
        s3_tenancy.location(ctx.account_id, uri)
    except s3_tenancy.ForeignLocation:
        raise ValidationError(f"Could not access the input location {uri}: AccessDenied.") from None
    except StorageError as error:  # not an S3 URI
        raise ValidationError(str(error)) from None


def _nudge(endpoint_id: int) -> None:
    try:
        async_tasks.drain.delay(endpoint_id)
    except OperationalError as error:  # the row is committed: the sweeper will find it
        log.warning("could not ask a worker to drain endpoint %s (%s)", endpoint_id, error)

