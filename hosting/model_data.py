"""Model data for a deployment: downloaded once and unpacked into the directory that serving
containers mount read-only at /opt/ml/model.

- `ModelDataUrl`, or `ModelDataSource.S3DataSource` with CompressionType Gzip: one `.tar.gz`,
  extracted with tar-slip protection (a member that would land outside, or a link that points
  outside however it chains through other links, is refused by name).
- `ModelDataSource.S3DataSource` with CompressionType None: an `S3Object` lands under its
  basename; an `S3Prefix` (ending in `/`) lands with every key's path below the prefix.
Either way the model data may hold at most SAGEPORT_MAX_MODEL_DATA_BYTES (the archive, and what
it unpacks to), so a small archive cannot fill the host's disk."""

import shutil
import tempfile
from pathlib import Path, PurePosixPath

from django.conf import settings

from accounts import s3_tenancy
from hosting import multi_model
from storage.archives import ArchiveError, safe_extract
from storage.s3 import ByteBudget, StorageError, download_many, list_keys
from storage.safe_files import contained


class ModelDataError(Exception):
    """The model data cannot be staged; the message is fit for a FailureReason."""


def stage(account_id: str, container: dict, dest: Path) -> None:
    """Fill `dest` (emptied first, so a half-done earlier attempt leaves nothing) with the model
    data of a ContainerDefinition of `account_id`'s model; an empty directory when it names none.
    Model data in another account's bucket is refused (accounts/s3_tenancy)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    if multi_model.is_multi_model(container):
        return  # its models are staged on first use, by the data plane (hosting/multi_model.py)
    source = container.get("ModelDataSource", {}).get("S3DataSource")
    url = container.get("ModelDataUrl")
    try:
        if url is not None:
            _unpack_archive(s3_tenancy.location(account_id, url), dest)
        elif source is not None and source["CompressionType"] == "Gzip":
            _unpack_archive(s3_tenancy.location(account_id, source["S3Uri"]), dest)
        elif source is not None:
            location = s3_tenancy.location(account_id, source["S3Uri"])
            _download_uncompressed(location, source["S3DataType"], dest)
    except StorageError as error:
        if error.transient:
            raise  # retried with backoff by the reconciler
        raise ModelDataError(f"Could not download the model data: {error}") from None


def _unpack_archive(location: s3_tenancy.S3Location, dest: Path) -> None:
    bucket, key = location
    uri = location.uri
    with tempfile.TemporaryDirectory(dir=dest.parent) as scratch:
        archive = Path(scratch) / "model.tar.gz"
        download_many([(bucket, key, archive)], _budget())
        try:
            safe_extract(archive, dest, settings.SAGEPORT_MAX_MODEL_DATA_BYTES)
        except ArchiveError as error:
            raise ModelDataError(f"Could not unpack the model data {uri}: {error}") from None


def _download_uncompressed(location: s3_tenancy.S3Location, data_type: str, dest: Path) -> None:
    bucket, prefix = location
    uri = location.uri
    if data_type == "S3Object":
        items = [(bucket, prefix, dest / PurePosixPath(prefix).name)]
    else:
        keys = [key for key in list_keys(bucket, prefix) if not key.endswith("/")]
        items = [(bucket, key, _below(dest, key, key[len(prefix) :], uri)) for key in keys]
    if not items:
        raise ModelDataError(f"Could not download the model data: no S3 objects found under {uri}")
    download_many(items, _budget())


def _budget() -> ByteBudget:
    limit = settings.SAGEPORT_MAX_MODEL_DATA_BYTES
    return ByteBudget(limit, f"the model data holds more than {limit} bytes (SAGEPORT_MAX_MODEL_DATA_BYTES)")


def _below(dest: Path, key: str, relative: str, uri: str) -> Path:
    path = contained(relative)
    if path is None:
        raise ModelDataError(f"Refusing S3 key '{key}' of {uri}: it would be written outside /opt/ml/model")
    return dest.joinpath(*path.parts)
