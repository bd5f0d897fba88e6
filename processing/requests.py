"""Checks on a CreateProcessingJob request that the botocore shape cannot express, and the
request as stored (SageMaker's defaults filled in).

The shape validation (types, lengths, patterns, enums, required members) has already run, and so
has the tenancy rule (every S3 URI of the request is the caller's account's:
accounts/s3_tenancy.refuse_foreign_locations, the check every served operation goes through).
These are the cross-field rules of SageMaker's processing contract and the limits of what
Sageport runs, each a ValidationException whose text says what to change."""
from pathlib import PurePosixPath

from capacity import instance_types
from jobs import workspace
from protocol.errors import ValidationException

PROCESSING_ROOT = PurePosixPath("/opt/ml/processing")
DEFAULT_MAX_RUNTIME_SECONDS = 86400  # SageMaker's default StoppingCondition
FILE, PIPE = "File", "Pipe"  # ProcessingS3Input.S3InputMode

# Members that change what happens inside or around the container and that Sageport does not
# carry out: refusing them is honest, silently ignoring them is not.
_DATASET_DEFINITION = (
    "DatasetDefinition (Athena and Redshift queries) is not supported by Sageport: give an S3Input "
    "with the query's results in S3."
)


def check_create_request(params: dict) -> None:
    problems = _resource_problems(params["ProcessingResources"]["ClusterConfig"])
    problems += _input_problems(params.get("ProcessingInputs", []))
    problems += _output_problems(params.get("ProcessingOutputConfig", {}).get("Outputs", []))
    problems += _local_path_clashes(params)
    problems += _pipe_directory_clashes(params)
    if params.get("NetworkConfig", {}).get("VpcConfig"):
        problems.append(
            "NetworkConfig.VpcConfig is not supported by Sageport: "
            "VPC placement has no meaning on a Docker host."
        )
    if problems:
        raise ValidationException(" ".join(problems))


def _resource_problems(cluster: dict) -> list[str]:
    if "InstancePreferences" in cluster:
        return [
            "ProcessingResources.ClusterConfig.InstancePreferences is not supported by Sageport: "
            "give InstanceType."
        ]
    if "InstanceType" not in cluster or "InstanceCount" not in cluster:
        return ["ProcessingResources.ClusterConfig.InstanceType and InstanceCount are required."]
    return instance_types.unknown_type_problems(cluster["InstanceType"], "ProcessingResources.ClusterConfig.")


def _input_problems(inputs: list[dict]) -> list[str]:
    problems = _duplicate_names("InputName", [item["InputName"] for item in inputs])
    for position, item in enumerate(inputs):
        where = f"ProcessingInputs[{position}] ('{item['InputName']}')"
        if "DatasetDefinition" in item:
            problems.append(f"{where}: {_DATASET_DEFINITION}")
            continue
        source = item.get("S3Input")
        if source is None:
            problems.append(f"{where}: give S3Input (exactly one of S3Input or DatasetDefinition).")
            continue
        # ProcessingS3Input.S3CompressionType (API reference): "Gzip can only be used when Pipe
        # mode is specified as the S3InputMode."
        if source.get("S3CompressionType", "None") == "Gzip" and source.get("S3InputMode", FILE) != PIPE:
            problems.append(f"{where}: S3CompressionType Gzip can only be used when S3InputMode is Pipe.")
        if not item.get("AppManaged", False):
            problems += _local_path_problems(f"{where}.S3Input.LocalPath", source.get("LocalPath"))
    return problems


def _output_problems(outputs: list[dict]) -> list[str]:
    problems = _duplicate_names("OutputName", [item["OutputName"] for item in outputs])
    for position, item in enumerate(outputs):
        where = f"ProcessingOutputConfig.Outputs[{position}] ('{item['OutputName']}')"
        if "FeatureStoreOutput" in item:
            problems.append(f"{where}: FeatureStoreOutput is not supported by Sageport: give S3Output.")
            continue
        destination = item.get("S3Output")
        if destination is None:
            problems.append(f"{where}: give S3Output.")
        elif not item.get("AppManaged", False):
            problems += _local_path_problems(f"{where}.S3Output.LocalPath", destination.get("LocalPath"))
    return problems


def _duplicate_names(member: str, names: list[str]) -> list[str]:
    repeated = sorted({name for name in names if names.count(name) > 1})
    return [f"{member} must be unique; repeated: {', '.join(repeated)}."] if repeated else []


def _local_path_problems(where: str, local_path: str | None) -> list[str]:
    """SageMaker: LocalPath is an absolute path that must begin with /opt/ml/processing/."""
    if not local_path:
        return [f"{where} is required (an absolute path under {PROCESSING_ROOT}/)."]
    path = PurePosixPath(local_path)
    if not path.is_absolute() or PROCESSING_ROOT not in path.parents or ".." in path.parts:
        return [f"{where} '{local_path}' must be an absolute path under {PROCESSING_ROOT}/ without '..'."]
    if not all(workspace.is_directory_name(part) for part in path.parts[1:]):
        return [f"{where} '{local_path}' is not a valid directory path."]
    return []


def _local_path_clashes(params: dict) -> list[str]:
    """Every input and output is a directory of its own in the container (a mount): two at one
    path would hide each other's files. One inside another is allowed, as SageMaker allows it
    (the SDK's processors put their code input at /opt/ml/processing/input/code beside a data
    input at /opt/ml/processing/input): the engine mounts the outer one first."""
    paths = [str(PurePosixPath(path)) for path in local_paths(params) if path]
    repeated = sorted({path for path in paths if paths.count(path) > 1})
    return [
        f"LocalPath '{path}' is given to more than one input or output: each needs a directory of its own."
        for path in repeated
    ]


def _pipe_directory_clashes(params: dict) -> list[str]:
    """A Pipe input's FIFOs appear beside its LocalPath (`<LocalPath>_<epoch>`, processing/pipes.py),
    in a directory Sageport mounts for them: that directory cannot also be another input's or
    output's own directory."""
    taken = {str(PurePosixPath(path)) for path in local_paths(params) if path}
    problems = []
    for position, item in enumerate(params.get("ProcessingInputs", [])):
        source = item.get("S3Input") or {}
        if source.get("S3InputMode") != PIPE or item.get("AppManaged", False) or not source.get("LocalPath"):
            continue
        beside = str(PurePosixPath(source["LocalPath"]).parent)
        if beside in taken:
            problems.append(
                f"ProcessingInputs[{position}] ('{item['InputName']}'): a Pipe input's FIFOs appear "
                f"beside its LocalPath, in {beside}, which is the LocalPath of another input or output; "
                "give the Pipe input a LocalPath whose directory is not another's."
            )
    return problems


def local_paths(params: dict) -> list[str]:
    found = [item.get("S3Input", {}).get("LocalPath") for item in params.get("ProcessingInputs", [])]
    outputs = params.get("ProcessingOutputConfig", {}).get("Outputs", [])
    return found + [item.get("S3Output", {}).get("LocalPath") for item in outputs]


def with_defaults(params: dict) -> dict:
    """The request as Describe shows it: SageMaker's documented defaults filled in."""
    stored = {key: value for key, value in params.items() if key != "Tags"}
    stored.setdefault("StoppingCondition", {"MaxRuntimeInSeconds": DEFAULT_MAX_RUNTIME_SECONDS})
    for item in stored.get("ProcessingInputs", []):
        item.setdefault("AppManaged", False)
        source = item.get("S3Input")
        if source is not None:
            source.setdefault("S3InputMode", FILE)
            source.setdefault("S3DataDistributionType", "FullyReplicated")
            source.setdefault("S3CompressionType", "None")
    for item in stored.get("ProcessingOutputConfig", {}).get("Outputs", []):
        item.setdefault("AppManaged", False)
    return stored
