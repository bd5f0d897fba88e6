"""Checks on a CreateTrainingJob request that the botocore shape cannot express.

The shape validation (types, lengths, patterns, enums) has already run; these are the
cross-field rules and the limits of what Sageport runs, each a ValidationException whose text
says exactly what to change."""
import re
from pathlib import PurePosixPath

from capacity import instance_types
from protocol.errors import ValidationException
from training import workspace

DEFAULT_MAX_RUNTIME_SECONDS = 86400
# The platform's own mounts: a checkpoint directory may not overlap them.
_PLATFORM_PATHS = tuple(PurePosixPath(f"/opt/ml/{name}") for name in ("input", "model", "output"))

# Members that change what happens inside or around the container and that Sageport does not
# carry out yet: refusing them is honest, silently ignoring them is not.
UNSUPPORTED_MEMBERS = {
    "VpcConfig": "VPC placement has no meaning on a Docker host",
    "RemoteDebugConfig": "remote debugging is not available",
    "SessionChainingConfig": "session chaining is not available",
    "ServerlessJobConfig": "serverless jobs are not available",
    "InfraCheckConfig": "infrastructure checks are not available",
}


def check_create_request(params: dict) -> None:
    problems: list[str] = []
    for member, why in UNSUPPORTED_MEMBERS.items():
        if member in params:
            problems.append(f"{member} is not supported by Sageport: {why}.")
    problems += _algorithm_problems(params.get("AlgorithmSpecification"))
    problems += _resource_problems(params.get("ResourceConfig"))
    problems += _channel_problems(params)
    problems += _checkpoint_problems(params.get("CheckpointConfig"))
    if not params["OutputDataConfig"]["S3OutputPath"].startswith("s3://"):
        problems.append("OutputDataConfig.S3OutputPath must be an s3:// URI.")
    if problems:
        raise ValidationException(" ".join(problems))


def _algorithm_problems(spec: dict | None) -> list[str]:
    if spec is None:
        return ["AlgorithmSpecification is required: give AlgorithmSpecification.TrainingImage."]
    problems = []
    if spec.get("AlgorithmName"):
        problems.append(
            "AlgorithmName is not supported by Sageport: give AlgorithmSpecification.TrainingImage."
        )
    elif not spec.get("TrainingImage"):
        problems.append("AlgorithmSpecification.TrainingImage is required.")
    for definition in spec.get("MetricDefinitions", []):
        try:
            re.compile(definition["Regex"])
        except re.error as exc:
            problems.append(f"MetricDefinitions regex for metric '{definition['Name']}' is invalid: {exc}.")
    return problems


def _resource_problems(resources: dict | None) -> list[str]:
    if resources is None:
        return ["ResourceConfig is required: give InstanceType and InstanceCount."]
    if "InstanceGroups" in resources:
        return ["ResourceConfig.InstanceGroups (heterogeneous clusters) is not supported by Sageport."]
    problems = []
    if "InstanceType" not in resources or "InstanceCount" not in resources:
        problems.append("ResourceConfig.InstanceType and ResourceConfig.InstanceCount are required.")
    else:
        problems += instance_types.unknown_type_problems(resources["InstanceType"], "ResourceConfig.")
    return problems


def _channel_problems(params: dict) -> list[str]:
    problems = []
    names = [channel["ChannelName"] for channel in params.get("InputDataConfig", [])]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        problems.append(f"Channel names must be unique; repeated: {', '.join(duplicates)}.")
    for position, channel in enumerate(params.get("InputDataConfig", []), start=1):
        name = channel["ChannelName"]
        if not workspace.is_directory_name(name):
            problems.append(
                f"Value '{name}' at 'inputDataConfig.{position}.member.channelName' failed to satisfy "
                "constraint: Member must not be '.' or '..' (a channel is the directory "
                "/opt/ml/input/data/<ChannelName>)."
            )
        source = channel["DataSource"].get("S3DataSource")
        if source is None:
            problems.append(f"Channel '{name}': only S3DataSource is supported.")
        elif source["S3DataType"] == "AugmentedManifestFile":
            problems.append(f"Channel '{name}': S3DataType AugmentedManifestFile is not supported.")
        elif not source["S3Uri"].startswith("s3://"):
            problems.append(f"Channel '{name}': S3Uri must be an s3:// URI.")
        if channel.get("RecordWrapperType") == "RecordIO":
            problems.append(f"Channel '{name}': RecordWrapperType RecordIO is not supported by Sageport.")
    return problems


def _checkpoint_problems(config: dict | None) -> list[str]:
    if config is None:
        return []
    problems = []
    if not config["S3Uri"].startswith("s3://"):
        problems.append("CheckpointConfig.S3Uri must be an s3:// URI.")
    local_path = config.get("LocalPath")
    if local_path:  # empty means the default, /opt/ml/checkpoints
        path = PurePosixPath(local_path)
        if not path.is_absolute() or ".." in path.parts:
            problems.append("CheckpointConfig.LocalPath must be an absolute path without '..'.")
        elif any(path == root or path in root.parents or root in path.parents for root in _PLATFORM_PATHS):
            problems.append(
                "CheckpointConfig.LocalPath must not contain or lie inside /opt/ml/input, /opt/ml/model "
                "or /opt/ml/output."
            )
    return problems


def with_defaults(params: dict) -> dict:
    """The request as Describe shows it: SageMaker's documented defaults filled in."""
    stored = {key: value for key, value in params.items() if key != "Tags"}
    stored.setdefault("StoppingCondition", {})
    stored["StoppingCondition"].setdefault("MaxRuntimeInSeconds", DEFAULT_MAX_RUNTIME_SECONDS)
    stored["OutputDataConfig"].setdefault("CompressionType", "GZIP")
    job_mode = stored["AlgorithmSpecification"]["TrainingInputMode"]
    for channel in stored.get("InputDataConfig", []):
        channel.setdefault("InputMode", job_mode)
        channel.setdefault("CompressionType", "None")
        channel.setdefault("RecordWrapperType", "None")
        channel["DataSource"]["S3DataSource"].setdefault("S3DataDistributionType", "FullyReplicated")
    stored.setdefault("EnableNetworkIsolation", False)
    stored.setdefault("EnableInterContainerTrafficEncryption", False)
    stored.setdefault("EnableManagedSpotTraining", False)
    return stored
