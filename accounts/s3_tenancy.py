"""The tenancy rule for S3: an account's requests reach only its own buckets, through Sageport too.

The S3 gateway refuses one account's key on another's bucket, but the worker reads channels,
writes artifacts, syncs checkpoints and unpacks model data with the platform's key. So every S3
URI a request names goes through this module twice:

- at the API, before anything is created: `refuse_foreign_locations` walks the request against
  its botocore input shape and refuses any S3 URI whose bucket the caller's account does not own
  (`request_locations` finds them: every string member whose shape's pattern is an S3 URI, in
  every served operation present and future, plus the code location SageMaker keeps in a
  hyperparameter or a model's environment), any role ARN of another account, and any role ARN
  no IAM role can have (a name over 64 characters: containers act as the role, identity/);
- where the worker turns a URI into reads or writes (`location`), because a bucket can change
  hands between the request and the job's run.

Owner: the account that created the bucket through the gateway (`accounts.buckets`), or that an
operator assigned it to (`manage.py assignbucket`). A bucket created behind the gateway's back
(directly in the store, or in an external S3) has no owner and belongs to the platform only: no
tenant may name it until it is assigned. A bucket that does not exist may be named (its job fails
on NoSuchBucket, as on SageMaker): nothing can be read from it, and whoever creates it through
the gateway owns it, so it is checked again when used."""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from botocore.model import Shape

from accounts import buckets
from protocol.arns import is_iam_role_arn
from protocol.context import RequestContext
from protocol.errors import AccessDenied, ServiceUnavailable, ValidationException
from protocol.shapes import operation_model
from storage.s3 import StorageError, bucket_exists, parse_s3_uri, s3_uri

# Where SageMaker keeps a code location outside any S3-typed member: script mode's
# `sagemaker_submit_directory` hyperparameter (the SDK sends it JSON-encoded) and a serving
# container's SAGEMAKER_SUBMIT_DIRECTORY.
CODE_LOCATION_ENTRIES = {
    "HyperParameters": "sagemaker_submit_directory",
    "Environment": "SAGEMAKER_SUBMIT_DIRECTORY",
}
# The members naming the role a request passes: the account of the role must be the caller's.
ROLE_SHAPE = "RoleArn"
_ROLE_ACCOUNT = re.compile(r"^arn:aws[a-z-]*:iam::(\d{12}):role/")
_MODEL_DATA_MEMBERS = ("ModelDataUrl", "ModelDataSource", "AdditionalModelDataSources")


class ForeignLocation(StorageError):
    """An S3 location whose bucket is not the account's: never transient, never retried."""


class S3Location(NamedTuple):
    bucket: str
    key: str

    @property
    def uri(self) -> str:
        return s3_uri(self.bucket, self.key)


@dataclass(frozen=True)
class NamedUri:
    path: str  # where the request names it: "InputDataConfig[0].DataSource.S3DataSource.S3Uri"
    uri: str


# --- At use time: the one door from a request's S3 URI to the store ----------------------------


def location(account_id: str, uri: str, action: str = "read") -> S3Location:
    """(bucket, key) of `uri` once `account_id` may use the bucket; ForeignLocation otherwise (a
    StorageError, so the job or deployment fails with it as with the store's own AccessDenied)."""
    bucket, key = parse_s3_uri(uri)
    if not may_use(account_id, bucket):
        raise ForeignLocation(f"Could not {action} {s3_uri(bucket, key)}: AccessDenied")
    return S3Location(bucket, key)


def may_use(account_id: str, bucket: str) -> bool:
    """The account's own bucket, or one that does not exist: nothing can be read from it, and the
    store answers NoSuchBucket, as SageMaker's jobs fail on a missing bucket. A bucket of another
    account, or of nobody (the platform's), is never usable."""
    owner = buckets.owner_of(bucket)
    if owner is not None:
        return bool(account_id) and owner == account_id
    return not bucket_exists(bucket)


# --- At the API: nothing is created with another account's location ------------------------------


def refuse_foreign_locations(ctx: RequestContext, botocore_name: str, operation: str, params: dict) -> None:
    """The request check every served operation goes through (registered in AccountsConfig)."""
    references = _references(botocore_name, operation, params)
    for named in filter(_is_role, references):
        if _role_account(named.uri) != ctx.account_id:
            raise AccessDenied("Cross-account pass role is not allowed.")
        if not is_iam_role_arn(named.uri):  # no role can have that name: SageMaker cannot assume it
            raise ValidationException(
                f"Could not assume role {named.uri}. Please ensure that the role exists and allows "
                "principal 'sagemaker.amazonaws.com' to assume the role."
            )
    for named in filter(_is_location, references):
        try:
            bucket, _ = parse_s3_uri(named.uri)
        except StorageError as error:
            raise ValidationException(f"{named.path}: {error}") from None
        if not _may_use_at_create(ctx.account_id, bucket):
            raise ValidationException(_refusal(named, bucket, ctx.region, _role_of(params)))


def _may_use_at_create(account_id: str, bucket: str) -> bool:
    try:
        return may_use(account_id, bucket)
    except StorageError as error:  # whether a bucket of nobody exists: the store did not answer
        raise ServiceUnavailable(f"Could not check the S3 location's bucket: {error}") from None


def request_locations(botocore_name: str, operation: str, params: dict) -> list[NamedUri]:
    """Every S3 URI that `params` names, with where."""
    return list(filter(_is_location, _references(botocore_name, operation, params)))


def _references(botocore_name: str, operation: str, params: dict) -> list[NamedUri]:
    """The S3 URIs and role ARNs of `params` (a role's path ends in `#role`)."""
    model = operation_model(botocore_name, operation)
    if model is None or not _has_locations(botocore_name, operation):
        return []
    return list(_walk(model.input_shape, params, ""))


def _is_role(named: NamedUri) -> bool:
    return named.path.endswith("#role")


def _is_location(named: NamedUri) -> bool:
    return not _is_role(named)


def _walk(shape: Shape, value, path: str) -> Iterator[NamedUri]:
    if shape.type_name == "structure" and isinstance(value, dict):
        for name, member in shape.members.items():
            if name in value:
                yield from _walk(member, value[name], f"{path}.{name}" if path else name)
    elif shape.type_name == "list" and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(shape.member, item, f"{path}[{index}]")
    elif shape.type_name == "map" and isinstance(value, dict):
        yield from _code_location(path, value)
        for key, item in value.items():
            yield from _walk(shape.value, item, f"{path}.{key}")
    elif shape.type_name == "string" and isinstance(value, str):
        if shape.name == ROLE_SHAPE:
            yield NamedUri(f"{path}#role", value)
        elif is_s3_uri_shape(shape):
            yield NamedUri(path, value)


def _code_location(path: str, entries: dict) -> Iterator[NamedUri]:
    key = CODE_LOCATION_ENTRIES.get(path.rpartition(".")[2])
    value = entries.get(key) if key else None
    if isinstance(value, str):
        uri = _json_string(value)
        if uri.startswith("s3://"):
            yield NamedUri(f"{path}.{key}", uri)


def _json_string(value: str) -> str:
    """The SDK writes hyperparameters as JSON (`"s3://b/k"` with its quotes); others write them raw."""
    try:
        decoded = json.loads(value)
    except ValueError:
        return value
    return decoded if isinstance(decoded, str) else value


def is_s3_uri_shape(shape: Shape) -> bool:
    """A string shape whose pattern takes `s3://bucket/key` and not a bare `bucket/key`: how the
    SageMaker model types every S3 location (S3Uri, Url, S3ModelUri, DestinationS3Uri, ...)."""
    return shape.type_name == "string" and _is_s3_uri_pattern(shape.metadata.get("pattern"))


@cache
def _is_s3_uri_pattern(pattern: str | None) -> bool:
    if not pattern:
        return False
    try:
        compiled = re.compile(pattern)
    except re.error:
        return False
    return bool(compiled.fullmatch("s3://bucket/key")) and not compiled.fullmatch("bucket/key")


@cache
def _has_locations(botocore_name: str, operation: str) -> bool:
    """Whether the input shape can hold an S3 URI, a role or a code location at all: most
    operations (Describe, List) cannot, and skip the walk."""
    return _shape_has_locations(operation_model(botocore_name, operation).input_shape, frozenset())


def _shape_has_locations(shape: Shape, seen: frozenset) -> bool:
    if shape.name in seen:
        return False
    seen = seen | {shape.name}
    if shape.type_name == "structure":
        return any(
            name in CODE_LOCATION_ENTRIES or _shape_has_locations(member, seen)
            for name, member in shape.members.items()
        )
    if shape.type_name == "list":
        return _shape_has_locations(shape.member, seen)
    if shape.type_name == "map":
        return _shape_has_locations(shape.value, seen)
    return shape.type_name == "string" and (shape.name == ROLE_SHAPE or is_s3_uri_shape(shape))


def _role_account(arn: str) -> str | None:
    match = _ROLE_ACCOUNT.match(arn)
    return match.group(1) if match else None


def _role_of(params: dict) -> str:
    """How the refusal names the request's role: SageMaker quotes its ARN."""
    for member in ("RoleArn", "ExecutionRoleArn"):
        if isinstance(params.get(member), str):
            return f'the role "{params[member]}"'
    return "the request's role"


def _refusal(named: NamedUri, bucket: str, region: str, role: str) -> str:
    """SageMaker's words for a location the role cannot reach: for a channel, CreateTrainingJob's
    (aws/amazon-sagemaker-examples#2489); for model data, CreateModel's; otherwise the same
    sentence naming the member and the permission the location needs."""
    if ".S3DataSource." in named.path and named.path.startswith("InputDataConfig"):
        return (
            f'No S3 objects found under S3 URL "{named.uri}" given in input data source. Please ensure '
            f"that the bucket exists in the selected region ({region}), that objects exist under that "
            f'S3 prefix, and that {role} has "s3:ListBucket" permissions on bucket "{bucket}".'
        )
    if any(member in named.path for member in _MODEL_DATA_MEMBERS):
        return (
            f"Could not access model data at {named.uri}. Please ensure that {role} exists and "
            'that its trust relationship policy allows the action "sts:AssumeRole" for the service '
            'principal "sagemaker.amazonaws.com". Also ensure that the role has "s3:GetObject" '
            f"permissions and that the object is located in {region}."
        )
    return (
        f'Could not access the S3 location "{named.uri}" given in {named.path}. Please ensure that the '
        f"bucket exists in the selected region ({region}) and that {role} has permissions "
        f'on bucket "{bucket}".'
    )
