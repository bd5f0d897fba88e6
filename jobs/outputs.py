"""Uploading what a job's containers leave in their output directories to S3: one archive packed
from the directories of every instance (a training job's model.tar.gz and output.tar.gz), or
their files as they are, merged under one prefix (a training model with `CompressionType: NONE`,
a processing output). Archives are packed straight into S3 (storage/archives.upload_tar_gz): no
archive is written to the host's disk. Directories a container wrote are walked without
following links (storage/safe_files)."""
from pathlib import Path

from accounts import s3_tenancy
from storage import archives, s3


def location(account_id: str, uri: str) -> s3_tenancy.S3Location:
    """Where a job's outputs go, once its bucket is checked to be the job's account's."""
    return s3_tenancy.location(account_id, uri, "write")


def upload_archive(directories: list[Path], where: s3_tenancy.S3Location, name: str) -> int:
    """Pack `directories` (every instance's, merged) into the .tar.gz `name` under `where`;
    returns the number of members."""
    return archives.upload_tar_gz(directories, where.bucket, _under(where.key, name))


def upload_files(directories: list[Path], where: s3_tenancy.S3Location, name: str = "") -> int:
    """Upload the regular files of `directories` (every instance's, merged) as they are, under
    `where` (and `name` below it); returns the number of files."""
    return sum(s3.upload_tree(directory, where.bucket, _under(where.key, name)) for directory in directories)


def _under(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix and name else prefix or name
