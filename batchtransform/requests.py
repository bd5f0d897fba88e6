"""Checks on CreateTransformJob that the botocore shape cannot express.

The shape validation (types, lengths, patterns, enums) and the tenancy rule on every S3 URI
(accounts/s3_tenancy, run for every operation) have already run; these are SageMaker's cross-field
rules and the limits of what Sageport runs, each a ValidationException whose text says what to
change. Members that would change behaviour Sageport does not carry out are refused, never
silently ignored."""

from capacity import instance_types
from protocol.errors import ValidationException
from transform.filters import data_processing_problems

# API reference, CreateTransformJob.MaxPayloadInMB: "The value of MaxPayloadInMB cannot be greater
# than 100 MB. If you specify the MaxConcurrentTransforms parameter, the value of
# (MaxConcurrentTransforms * MaxPayloadInMB) also cannot exceed 100 MB."
MAX_PAYLOAD_LIMIT_MB = 100

UNSUPPORTED_MEMBERS = {
    "DataCaptureConfig": "data capture of transform jobs is not available yet",
}
SUPPORTED_DATA_TYPES = ("S3Prefix", "ManifestFile")


def check_create_request(params: dict) -> None:
    problems = [
        f"{member} is not supported by Sageport: {why}."
        for member, why in UNSUPPORTED_MEMBERS.items()
        if member in params
    ]
    problems += _payload_problems(params)
    problems += _input_problems(params["TransformInput"])
    problems += _instance_problems(params["TransformResources"]["InstanceType"])
    problems += data_processing_problems(params)
    if problems:
        raise ValidationException(" ".join(problems))


def _payload_problems(params: dict) -> list[str]:
    payload = params.get("MaxPayloadInMB")
    if payload is None:
        return []
    if payload > MAX_PAYLOAD_LIMIT_MB:
        return [f"MaxPayloadInMB must be less than or equal to {MAX_PAYLOAD_LIMIT_MB}, got {payload}."]
    concurrency = params.get("MaxConcurrentTransforms") or 0
    if concurrency and concurrency * payload > MAX_PAYLOAD_LIMIT_MB:
        return [
            f"The product of MaxConcurrentTransforms ({concurrency}) and MaxPayloadInMB ({payload}) "
            f"must not exceed {MAX_PAYLOAD_LIMIT_MB} MB."
        ]
    return []


def _input_problems(transform_input: dict) -> list[str]:
    data_type = transform_input["DataSource"]["S3DataSource"]["S3DataType"]
    if data_type not in SUPPORTED_DATA_TYPES:
        return [f"S3DataType {data_type} is not supported by Sageport: use S3Prefix or ManifestFile."]
    return []


def _instance_problems(instance_type: str) -> list[str]:
    """Any instance type of the catalog: an NVIDIA one's GPUs are given to its containers
    (batchtransform/placement.py); one whose accelerators Sageport cannot give fails the job
    with ResourceLimitExceeded when it is placed, as a processing or training job does."""
    return instance_types.unknown_type_problems(instance_type, "TransformResources.")
