"""File-mode staging of one training channel: S3 objects → `/opt/ml/input/data/<channel>` on a host.

SageMaker's rules, kept exactly:
- S3Prefix matches every key that starts with the prefix *string* (`data/tr` matches
  `data/train.csv` and `data/trial/x`); a file lands at its key relative to the last `/` of the
  prefix, so an exact object key lands under its basename.
- ManifestFile is a JSON list `[{"prefix": "s3://b/p/"}, "rel/key1", ...]`: object
  `prefix + rel`, placed at `rel`.
- ShardedByS3Key gives host i (0-based) every host_count-th object of the sorted keys;
  FullyReplicated gives every host everything."""
import json
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from accounts import s3_tenancy
from storage.s3 import ByteBudget, StorageError, download_many, get_bytes, list_keys, s3_uri
from storage.safe_files import contained


class ChannelError(StorageError):
    """The channel cannot be staged as specified (unsupported source, bad manifest, unsafe key)."""


@dataclass(frozen=True)
class _Object:
    bucket: str
    key: str
    relative_path: str  # where it lands, relative to the channel directory


def stage_channel(account_id: str, channel: dict, dest: Path, host_index: int, host_count: int) -> int:
    """Download this host's share of `channel` (a CreateTrainingJob `Channel` of `account_id`'s
    job) into `dest`; returns the number of objects staged. More than SAGEPORT_MAX_CHANNEL_BYTES
    in all fails (s3.SizeLimitExceeded) once the limit is crossed; a bucket of another account
    (the channel's, or one its manifest names) fails before anything is read."""
    objects = _channel_objects(account_id, channel)
    name = channel["ChannelName"]
    targets = {obj: _safe_destination(dest, obj, name) for obj in objects}  # all checked first
    objects = _host_share(channel, objects, host_index, host_count)
    max_bytes = settings.SAGEPORT_MAX_CHANNEL_BYTES
    budget = ByteBudget(max_bytes, (
        f"Data download failed: channel '{name}' holds more than {max_bytes} bytes, "
        "the limit of one channel (SAGEPORT_MAX_CHANNEL_BYTES)"
    ))
    download_many([(obj.bucket, obj.key, targets[obj]) for obj in objects], budget)
    return len(objects)


def host_object_keys(
    account_id: str, channel: dict, host_index: int, host_count: int
) -> list[tuple[str, str]]:
    """This host's share of `channel` as (bucket, key), in key order: what Pipe mode streams."""
    objects = _host_share(channel, _channel_objects(account_id, channel), host_index, host_count)
    return sorted((obj.bucket, obj.key) for obj in objects)


def _channel_objects(account_id: str, channel: dict) -> list[_Object]:
    name = channel["ChannelName"]
    source = _s3_data_source(channel)
    bucket, prefix = s3_tenancy.location(account_id, source["S3Uri"], "list")
    if source["S3DataType"] == "S3Prefix":
        objects = _prefix_objects(bucket, prefix)
    else:
        objects = _manifest_objects(account_id, name, bucket, prefix)
    if not objects:
        raise ChannelError(
            f"Data download failed: no S3 objects found under S3 URL '{source['S3Uri']}' "
            f"given in input data source of channel '{name}'"
        )
    return objects


def _host_share(channel: dict, objects: list[_Object], host_index: int, host_count: int) -> list[_Object]:
    if channel["DataSource"]["S3DataSource"].get("S3DataDistributionType") == "ShardedByS3Key":
        return sorted(objects, key=lambda obj: (obj.bucket, obj.key))[host_index::host_count]
    return objects


def _s3_data_source(channel: dict) -> dict:
    name = channel["ChannelName"]
    data_source = channel.get("DataSource", {})
    if "S3DataSource" not in data_source:
        kinds = ", ".join(sorted(data_source)) or "no data source"
        raise ChannelError(f"Channel '{name}': {kinds} is not supported; use S3DataSource")
    source = data_source["S3DataSource"]
    if source["S3DataType"] not in ("S3Prefix", "ManifestFile"):
        raise ChannelError(
            f"Channel '{name}': S3DataType {source['S3DataType']} is not supported; "
            "use S3Prefix or ManifestFile"
        )
    return source


def _prefix_objects(bucket: str, prefix: str) -> list[_Object]:
    return [
        _Object(bucket, key, _relative_to_prefix(key, prefix))
        for key in list_keys(bucket, prefix)
        if not key.endswith("/")  # "directory" marker objects hold no data
    ]


def _relative_to_prefix(key: str, prefix: str) -> str:
    """Where SageMaker puts a key under the channel directory. A prefix naming a "directory"
    (`data/train` or `data/train/`) keeps the path below it, so `data/train/a.csv` lands at
    `a.csv`; a prefix ending mid-name (`data/tr`) or naming one object keeps the path below its
    last "/" (`train.csv`)."""
    directory = prefix.rstrip("/") + "/"
    if key.startswith(directory):
        return key[len(directory):]
    return key[prefix.rfind("/") + 1:]


def _manifest_objects(account_id: str, name: str, bucket: str, key: str) -> list[_Object]:
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
        raise ChannelError(
            f"Channel '{name}': {s3_uri(bucket, key)} is not a valid manifest file: {error}"
        ) from None
    return [_Object(prefix_bucket, prefix + entry, entry) for entry in entries if not entry.endswith("/")]


def _safe_destination(dest: Path, obj: _Object, channel_name: str) -> Path:
    relative = contained(obj.relative_path)
    if relative is None:
        raise ChannelError(
            f"Refusing to stage S3 key '{obj.key}' of channel '{channel_name}': "
            f"it would be written outside /opt/ml/input/data/{channel_name}"
        )
    return dest.joinpath(*relative.parts)
