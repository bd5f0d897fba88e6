"""File-mode staging of one training channel: S3 objects → `/opt/ml/input/data/<channel>` on a
host, by the shared rules of jobs/staging.py (S3Prefix and ManifestFile, FullyReplicated and
ShardedByS3Key). What is training's: a channel's shape (`DataSource.S3DataSource`, the only data
source Sageport serves) and where it lands in the container."""
from pathlib import Path

from jobs import staging

# What a channel that cannot be staged as specified raises: the shared staging's error.
ChannelError = staging.InputError


def stage_channel(account_id: str, channel: dict, dest: Path, host_index: int, host_count: int) -> int:
    """Download this host's share of `channel` (a CreateTrainingJob `Channel` of `account_id`'s
    job) into `dest`; returns the number of objects staged (jobs/staging.stage says what fails)."""
    return staging.stage(account_id, _s3_input(channel), dest, host_index, host_count)


def host_object_keys(
    account_id: str, channel: dict, host_index: int, host_count: int
) -> list[tuple[str, str]]:
    """This host's share of `channel` as (bucket, key), in key order: what Pipe mode streams."""
    return staging.host_objects(account_id, _s3_input(channel), host_index, host_count)


def _s3_input(channel: dict) -> staging.S3Input:
    name = channel["ChannelName"]
    data_source = channel.get("DataSource", {})
    if "S3DataSource" not in data_source:
        kinds = ", ".join(sorted(data_source)) or "no data source"
        raise ChannelError(f"Channel '{name}': {kinds} is not supported; use S3DataSource")
    source = data_source["S3DataSource"]
    return staging.S3Input(
        noun="channel",
        name=name,
        uri=source["S3Uri"],
        data_type=source["S3DataType"],
        distribution=source.get("S3DataDistributionType", "FullyReplicated"),
        container_dir=f"/opt/ml/input/data/{name}",
    )
