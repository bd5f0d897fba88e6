"""The only code that talks S3: one shared client and the few transfers the workers need.

Every failure becomes a `StorageError` whose message names the S3 location and the service's
error code (`Could not read s3://b/k: NoSuchBucket`), fit to become a job's FailureReason."""
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectionError, EndpointConnectionError
from django.conf import settings

from storage import safe_files

# Many small objects are latency-bound, so a pool of single-request get/put on one shared client
# is 2-4x faster than one managed transfer per object. Every thread that may hold a request at
# once gets a connection of the client's pool (a full pool opens and drops extra ones): each of
# the pool's threads may be a multipart upload running its parts on threads of its own.
_TRANSFER_THREADS = 8
_PARTS_PER_UPLOAD = 4
_POOL_CONNECTIONS = _TRANSFER_THREADS * _PARTS_PER_UPLOAD
_CHUNK_BYTES = 1024 * 1024
# Above this size a single PUT is replaced by a managed multipart upload (and S3 caps a single
# PUT at 5 GiB anyway).
_MULTIPART_THRESHOLD_BYTES = 64 * 1024 * 1024
_DELETE_BATCH = 1000  # the most keys one DeleteObjects request takes
_MISSING_CODES = {"404", "NoSuchKey", "NoSuchBucket", "NotFound"}
_TRANSIENT_CODES = {"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout", "500", "503"}


class StorageError(Exception):
    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient  # the store was unreachable or overloaded: worth a retry


_client = None
_client_lock = threading.Lock()


def get_client():
    """The process-wide S3 client (thread-safe once built), configured from settings."""
    global _client
    with _client_lock:
        if _client is None:
            _client = boto3.session.Session().client(
                "s3",
                endpoint_url=settings.SAGEPORT_S3_ENDPOINT_URL or None,
                aws_access_key_id=settings.SAGEPORT_S3_ACCESS_KEY_ID,
                aws_secret_access_key=settings.SAGEPORT_S3_SECRET_ACCESS_KEY,
                region_name=settings.SAGEPORT_S3_REGION,
                config=Config(
                    s3={"addressing_style": "path"},
                    max_pool_connections=_POOL_CONNECTIONS,
                    retries={"mode": "standard", "max_attempts": 3},
                ),
            )
        return _client


def s3_uri(bucket: str, key: str) -> str:
    return f"s3://{bucket}/{key}"


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """(bucket, key) of `s3://bucket/key` or of the path-style `https://host/bucket/key`."""
    found = _bucket_and_key(uri)
    if found is None:
        raise StorageError(f"Invalid S3 URI {uri!r}: expected s3://bucket/key")
    return found


def _bucket_and_key(uri: str) -> tuple[str, str] | None:
    parts = urlsplit(uri)
    if parts.scheme == "s3":
        bucket, key = parts.netloc, parts.path.removeprefix("/")
    elif parts.scheme in ("http", "https") and parts.netloc:
        bucket, _, key = parts.path.removeprefix("/").partition("/")
    else:
        bucket = key = ""
    if not bucket or parts.query or parts.fragment:
        return None
    return bucket, key


def is_s3_uri(uri: str) -> bool:
    """Whether `uri` has the form of an S3 location naming a bucket (its format only: turning it
    into a read or write is accounts.s3_tenancy.location's, which checks whose bucket it is)."""
    return _bucket_and_key(uri) is not None


@contextmanager
def s3_errors(action: str, location: str) -> Iterator[None]:
    """botocore's errors inside as `StorageError`s naming `location` (transient or not)."""
    try:
        yield
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code") or "Unknown"
        transient = code in _TRANSIENT_CODES
        raise StorageError(f"Could not {action} {location}: {code}", transient=transient) from None
    except (EndpointConnectionError, ConnectionError) as error:
        raise StorageError(f"Could not {action} {location}: {error}", transient=True) from None
    except BotoCoreError as error:
        raise StorageError(f"Could not {action} {location}: {error}") from None


def bucket_exists(bucket: str) -> bool:
    """Whether the store has `bucket` (HeadBucket with the platform's key answers 404 when not)."""
    with s3_errors("find", s3_uri(bucket, "")):
        try:
            get_client().head_bucket(Bucket=bucket)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchBucket", "NotFound"):
                return False
            raise
    return True


def list_keys(bucket: str, prefix: str) -> list[str]:
    """Every key starting with `prefix` (a plain string prefix, not a directory), sorted."""
    keys: list[str] = []
    with s3_errors("list", s3_uri(bucket, prefix)):
        for page in get_client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys.extend(item["Key"] for item in page.get("Contents", ()))
    return sorted(keys)


@dataclass(frozen=True)
class Listing:
    """One page of a prefix's level, as a file browser shows it."""
    folders: list[str]  # the next level's prefixes, each ending in "/"
    objects: list[dict]  # ListObjectsV2's Contents entries (Key, Size, LastModified)
    next_token: str | None  # ContinuationToken of the next page


def list_level(bucket: str, prefix: str, token: str | None = None, limit: int = 200) -> Listing:
    """The folders and objects directly under `prefix` (a "/" delimiter), a page at a time."""
    extra = {"ContinuationToken": token} if token else {}
    with s3_errors("list", s3_uri(bucket, prefix)):
        page = get_client().list_objects_v2(
            Bucket=bucket, Prefix=prefix, Delimiter="/", MaxKeys=limit, **extra
        )
    return Listing(
        folders=[item["Prefix"] for item in page.get("CommonPrefixes", ())],
        objects=list(page.get("Contents", ())),
        next_token=page.get("NextContinuationToken"),
    )


def object_size(bucket: str, key: str) -> int | None:
    """The object's size in bytes; None when there is no such object (or bucket)."""
    with s3_errors("read", s3_uri(bucket, key)):
        try:
            return get_client().head_object(Bucket=bucket, Key=key)["ContentLength"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in _MISSING_CODES:
                return None
            raise


def get_bytes(bucket: str, key: str) -> bytes:
    with s3_errors("read", s3_uri(bucket, key)):
        return get_client().get_object(Bucket=bucket, Key=key)["Body"].read()


def put_bytes(bucket: str, key: str, data: bytes) -> None:
    with s3_errors("write", s3_uri(bucket, key)):
        get_client().put_object(Bucket=bucket, Key=key, Body=data)


def iter_object(bucket: str, key: str, start: int = 0) -> Iterator[bytes]:
    """The object's bytes from offset `start` on, in chunks, without holding it in memory."""
    with s3_errors("read", s3_uri(bucket, key)):
        extra = {"Range": f"bytes={start}-"} if start else {}
        body = get_client().get_object(Bucket=bucket, Key=key, **extra)["Body"]
        try:
            yield from body.iter_chunks(_CHUNK_BYTES)
        finally:
            body.close()  # a reader that stops early must not leave the connection half-read


def delete_keys(bucket: str, keys: list[str]) -> None:
    """Delete the keys (a missing key is no error, as in S3 itself)."""
    for start in range(0, len(keys), _DELETE_BATCH):
        batch = keys[start:start + _DELETE_BATCH]
        with s3_errors("delete", s3_uri(bucket, batch[0])):
            answer = get_client().delete_objects(
                Bucket=bucket, Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True}
            )
        for error in answer.get("Errors", ()):
            location = s3_uri(bucket, error["Key"])
            raise StorageError(f"Could not delete {location}: {error.get('Code', 'Unknown')}")


class SizeLimitExceeded(StorageError):
    """More bytes than a configured limit (SAGEPORT_MAX_*_BYTES) would be written."""


class ByteBudget:
    """A total of bytes that several concurrent downloads may write together; the download that
    crosses it fails with `message`, and so do the others at their next chunk."""

    def __init__(self, limit: int, message: str):
        self.limit, self.message, self.used = limit, message, 0
        self._lock = threading.Lock()

    def charge(self, count: int) -> None:
        with self._lock:
            self.used += count
            if self.used > self.limit:
                raise SizeLimitExceeded(self.message)


def download_many(items: list[tuple[str, str, Path]], budget: ByteBudget | None = None) -> None:
    """Download each (bucket, key, destination file) concurrently; parents are created. With a
    `budget`, all of them together may write at most its limit."""
    _in_pool(_download_one, [(*item, budget) for item in items])


def upload_contained(root: Path, items: list[tuple[str, str, str]]) -> list[str]:
    """Upload each (relative path below `root`, bucket, key) concurrently, where `root` is a tree
    a container writes to: each file is opened by `safe_files.open_regular`, so a symlink
    anywhere on its path, or a file that is not regular, is skipped, never followed, as is a file
    gone since it was listed. Returns the relative paths uploaded."""

    def upload_one(relative: str, bucket: str, key: str) -> bool:
        try:
            body = safe_files.open_regular(root, relative)
        except (FileNotFoundError, safe_files.UnsafeFile):
            return False
        with body:
            _upload_body(body, bucket, key)
        return True

    done = _in_pool(upload_one, items)
    return [item[0] for item, uploaded in zip(items, done, strict=True) if uploaded]


def upload_tree(root: Path, bucket: str, prefix: str) -> int:
    """Upload every regular file under `root` (a tree a container wrote; symlinks, FIFOs and
    devices are left out, never followed) to `prefix` + its path relative to `root`; returns the
    count uploaded."""
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    files = [entry.relative for entry in safe_files.walk(root) if entry.kind == safe_files.FILE]
    return len(upload_contained(root, [(relative, bucket, prefix + relative) for relative in files]))


def _upload_body(body: BinaryIO, bucket: str, key: str) -> None:
    with s3_errors("write", s3_uri(bucket, key)):
        if os.fstat(body.fileno()).st_size > _MULTIPART_THRESHOLD_BYTES:
            config = TransferConfig(
                multipart_threshold=_MULTIPART_THRESHOLD_BYTES, max_concurrency=_PARTS_PER_UPLOAD
            )
            get_client().upload_fileobj(body, bucket, key, Config=config)
        else:
            get_client().put_object(Bucket=bucket, Key=key, Body=body)


def _download_one(bucket: str, key: str, destination: Path, budget: ByteBudget | None) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    with s3_errors("read", s3_uri(bucket, key)):
        body = get_client().get_object(Bucket=bucket, Key=key)["Body"]
        with destination.open("wb") as file:
            for chunk in body.iter_chunks(_CHUNK_BYTES):
                if budget is not None:
                    budget.charge(len(chunk))
                file.write(chunk)


def _in_pool(function, argument_tuples: list[tuple]) -> list:
    """Run `function(*arguments)` for each tuple on a thread pool; their results in order, or
    the first error raised."""
    if not argument_tuples:
        return []
    with ThreadPoolExecutor(max_workers=min(_TRANSFER_THREADS, len(argument_tuples))) as pool:
        futures = [pool.submit(function, *arguments) for arguments in argument_tuples]
        try:
            return [future.result() for future in futures]
        finally:
            for future in futures:
                future.cancel()
