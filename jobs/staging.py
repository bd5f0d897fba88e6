"""Staging S3 inputs into a job's host directories, by SageMaker's rules for File mode (a training
channel, a processing input): S3 objects → one directory of one instance.

SageMaker's rules, kept exactly:
- S3Prefix matches every key that starts with the prefix *string* (`data/tr` matches
  `data/train.csv` and `data/trial/x`); a file lands at its key relative to the last `/` of the
  prefix, so an exact object key lands under its basename.
- ManifestFile is a JSON list `[{"prefix": "s3://b/p/"}, "rel/key1", ...]`: object
  `prefix + rel`, placed at `rel`.
- ShardedByS3Key gives host i (0-based) every host_count-th object of the sorted keys;
  FullyReplicated gives every host everything.
Every S3 location is checked to be the job's account's (accounts/s3_tenancy) before it is read,
and every destination to stay inside the input's directory before anything is written."""
import json
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from accounts import s3_tenancy
from storage.s3 import ByteBudget, StorageError, download_many, get_bytes, list_keys, s3_uri
from storage.safe_files import contained

DATA_TYPES = ("S3Prefix", "ManifestFile")


class InputError(StorageError):
    """The input cannot be staged as specified (unsupported type, bad manifest, unsafe key)."""


@dataclass(frozen=True)
class S3Input:
    """One input of a job as its request gives it, whatever the feature calls the fields."""

    noun: str  # what the feature calls an input, for messages: "channel"
    name: str  # its name: "train"
    uri: str
    data_type: str  # S3Prefix | ManifestFile
    distribution: str  # FullyReplicated | ShardedByS3Key
    container_dir: str  # where it lands in the container: /opt/ml/input/data/train

    @property
    def label(self) -> str:
        return f"{self.noun} '{self.name}'"

    @property
    def subject(self) -> str:
        """The label starting a sentence."""
        return f"{self.noun.capitalize()} '{self.name}'"


@dataclass(frozen=True)
class _Object:
    bucket: str
    key: str
    relative_path: str  # where it lands, relative to the input's directory


def stage(account_id: str, source: S3Input, dest: Path, host_index: int, host_count: int) -> int:
    """Download this host's share of `source` (an input of `account_id`'s job) into `dest`; returns
    the number of objects staged. More than SAGEPORT_MAX_CHANNEL_BYTES in all fails
    (s3.SizeLimitExceeded) once the limit is crossed; a bucket of another account (the input's, or
    one its manifest names) fails before anything is read."""
    objects = _objects(account_id, source)
    targets = {obj: _safe_destination(dest, obj, source) for obj in objects}  # all checked first
    objects = _host_share(source, objects, host_index, host_count)
    max_bytes = settings.SAGEPORT_MAX_CHANNEL_BYTES
    budget = ByteBudget(max_bytes, (
        f"Data download failed: {source.label} holds more than {max_bytes} bytes, "
        f"the limit of one {source.noun} (SAGEPORT_MAX_CHANNEL_BYTES)"
    ))
    download_many([(obj.bucket, obj.key, targets[obj]) for obj in objects], budget)
    return len(objects)


def host_objects(account_id: str, source: S3Input, host_index: int, host_count: int) -> list[tuple[str, str]]:
    """This host's share of `source` as (bucket, key), in key order: what Pipe mode streams."""
    objects = _host_share(source, _objects(account_id, source), host_index, host_count)
    return sorted((obj.bucket, obj.key) for obj in objects)


def host_paths(
    account_id: str, source: S3Input, host_index: int, host_count: int
) -> list[tuple[str, str, str]]:
    """This host's share of `source` as (bucket, key, path relative to the input), in key order:
    what batch transform reads, writing each answer at that relative path under its output."""
    objects = _host_share(source, _objects(account_id, source), host_index, host_count)
    targets = [(obj, contained(obj.relative_path)) for obj in objects]
    for obj, relative in targets:
        if relative is None:
            raise InputError(f"Refusing S3 key '{obj.key}' of {source.label}: its path leaves the input")
    return sorted((obj.bucket, obj.key, relative.as_posix()) for obj, relative in targets)


def _objects(account_id: str, source: S3Input) -> list[_Object]:
    if source.data_type not in DATA_TYPES:
        raise InputError(
            f"{source.subject}: S3DataType {source.data_type} is not supported; "
            "use S3Prefix or ManifestFile"
        )
    bucket, prefix = s3_tenancy.location(account_id, source.uri, "list")
    if source.data_type == "S3Prefix":
        objects = _prefix_objects(bucket, prefix)
    else:
        objects = _manifest_objects(account_id, source, bucket, prefix)
    if not objects:
        raise InputError(
            f"Data download failed: no S3 objects found under S3 URL '{source.uri}' "
            f"given in input data source of {source.label}"
        )
    return objects


def _host_share(source: S3Input, objects: list[_Object], host_index: int, host_count: int) -> list[_Object]:
    if source.distribution == "ShardedByS3Key":
        return sorted(objects, key=lambda obj: (obj.bucket, obj.key))[host_index::host_count]
    return objects


def _prefix_objects(bucket: str, prefix: str) -> list[_Object]:
    return [
        _Object(bucket, key, _relative_to_prefix(key, prefix))
        for key in list_keys(bucket, prefix)
        if not key.endswith("/")  # "directory" marker objects hold no data
    ]


def _relative_to_prefix(key: str, prefix: str) -> str:
    """Where SageMaker puts a key under the input's directory. A prefix naming a "directory"
    (`data/train` or `data/train/`) keeps the path below it, so `data/train/a.csv` lands at
    `a.csv`; a prefix ending mid-name (`data/tr`) or naming one object keeps the path below its
    last "/" (`train.csv`)."""
    directory = prefix.rstrip("/") + "/"
    if key.startswith(directory):
        return key[len(directory):]
    return key[prefix.rfind("/") + 1:]


def _manifest_objects(account_id: str, source: S3Input, bucket: str, key: str) -> list[_Object]:
    raw = get_bytes(bucket, key)
    try:
        header, *entries = json.loads(raw)
        if not all(isinstance(entry, str) for entry in entries):
            raise TypeError("every entry after the prefix must be a string")
        # What a manifest lists obeys the tenancy rule too: its prefix is read with the platform's key.
        prefix_bucket, prefix = s3_tenancy.location(account_id, header["prefix"], "read")
    except s3_tenancy.ForeignLocation:
        raise
    except (ValueError, TypeError, KeyError, StorageError) as error:
        raise InputError(
            f"{source.subject}: {s3_uri(bucket, key)} is not a valid manifest file: {error}"
        ) from None
    return [_Object(prefix_bucket, prefix + entry, entry) for entry in entries if not entry.endswith("/")]


def _safe_destination(dest: Path, obj: _Object, source: S3Input) -> Path:
    relative = contained(obj.relative_path)
    if relative is None:
        raise InputError(
            f"Refusing to stage S3 key '{obj.key}' of {source.label}: "
            f"it would be written outside {source.container_dir}"
        )
    return dest.joinpath(*relative.parts)
