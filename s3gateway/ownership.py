"""Which bucket a request reaches, and whether its caller may: the access rules of the gateway.

A bucket belongs to the account that created it (`accounts.buckets`); the platform key reaches
every bucket; a bucket with no owner belongs to the platform only. Every bucket a request
addresses is checked: the one in its path and the source of a copy (`x-amz-copy-source`)."""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from urllib.parse import unquote

from s3gateway.errors import S3Error

# us-east-1 answers 200 to an owner re-creating its bucket; every other region 409.
LEGACY_REGION = "us-east-1"


class Operation(Enum):
    LIST_BUCKETS = "ListBuckets"
    CREATE_BUCKET = "CreateBucket"
    DELETE_BUCKET = "DeleteBucket"
    BUCKET_REQUEST = "BucketRequest"  # any other request on a bucket or its objects


@dataclass(frozen=True)
class Target:
    bucket: str  # "" for the service (ListBuckets)
    key: str
    copy_source_bucket: str | None


def target_of(raw_path: str, headers: Mapping[str, str]) -> Target:
    """Path-style addressing: `/bucket/key`. Refuses dot segments: the store's router cleans
    paths, so `/mine/../theirs/key` would reach a bucket other than the one checked."""
    bucket, _, key = _bucket_and_key(raw_path)
    copy_source = headers.get("x-amz-copy-source")
    source_bucket = _bucket_and_key(copy_source.split("?", 1)[0])[0] if copy_source else None
    return Target(bucket, key, source_bucket)


def _bucket_and_key(encoded_path: str) -> tuple[str, str, str]:
    path = unquote(encoded_path)
    if any(segment in (".", "..") for segment in path.split("/")):
        raise S3Error(400, "InvalidRequest", "Paths with '.' or '..' segments are not accepted by this S3.")
    return path.lstrip("/").partition("/")


def operation_of(method: str, target: Target, query: tuple[tuple[str, str], ...]) -> Operation:
    if not target.bucket:
        return Operation.LIST_BUCKETS
    if not target.key and not query:
        if method == "PUT":
            return Operation.CREATE_BUCKET
        if method == "DELETE":
            return Operation.DELETE_BUCKET
    return Operation.BUCKET_REQUEST


def may_use(account_id: str, owner: str | None) -> bool:
    """`account_id` "" is the platform key."""
    return account_id == "" or owner == account_id


def refuse_create(account_id: str, owner: str | None, region: str) -> S3Error | None:
    """The error S3 answers when `account_id` creates a bucket `owner` already has; None when it
    may go ahead (no owner) or, in us-east-1, when re-creating its own bucket is a success."""
    if owner is None or (owner == account_id and region == LEGACY_REGION):
        return None
    if owner == account_id:
        return S3Error(
            409,
            "BucketAlreadyOwnedByYou",
            "Your previous request to create the named bucket succeeded and you already own it.",
        )
    return bucket_already_exists()


def bucket_already_exists() -> S3Error:
    return S3Error(
        409,
        "BucketAlreadyExists",
        "The requested bucket name is not available. The bucket "
        "namespace is shared by all users of the system. Please select a different name and try again.",
    )
