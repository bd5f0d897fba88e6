"""An endpoint config's AsyncInferenceConfig: what CreateEndpointConfig accepts of it, and what
the asynchronous queue (hosting/async_queue.py) reads from it.

Accepted: OutputConfig.S3OutputPath (required: where outputs go), S3FailurePath, and
ClientConfig.MaxConcurrentInvocationsPerInstance. Refused, because Sageport could not do what
they ask: NotificationConfig (there is no SNS here to publish the success or error message to)
and KmsKeyId (there is no KMS to encrypt the objects with)."""

from storage.s3 import is_s3_uri

# SageMaker chooses a concurrency when the config gives none; one request per instance at a time
# is the value that never overloads a model server written for one request.
DEFAULT_MAX_CONCURRENT_PER_INSTANCE = 1
OUTPUT_SUFFIX = ".out"
FAILURE_SUFFIX = "-error.out"


def problems(config: dict) -> list[str]:
    output = config.get("OutputConfig", {})
    found = []
    if "NotificationConfig" in output:
        found.append(
            "AsyncInferenceConfig.OutputConfig.NotificationConfig is not supported by Sageport: there "
            "is no SNS to publish to; poll the output and failure locations instead."
        )
    if output.get("KmsKeyId"):
        found.append(
            "AsyncInferenceConfig.OutputConfig.KmsKeyId is not supported by Sageport: there is no KMS."
        )
    for member in ("S3OutputPath", "S3FailurePath"):
        uri = output.get(member)
        if uri is not None and not is_s3_uri(uri):
            found.append(f"AsyncInferenceConfig.OutputConfig.{member} must be an s3:// URI naming a bucket.")
    if not output.get("S3OutputPath"):
        found.append("AsyncInferenceConfig.OutputConfig.S3OutputPath is required.")
    return found



def max_concurrent_per_instance(config: dict) -> int:
    client = config.get("ClientConfig", {})
    return client.get("MaxConcurrentInvocationsPerInstance", DEFAULT_MAX_CONCURRENT_PER_INSTANCE)


def output_location(config: dict, inference_id: str) -> str:
    """`<S3OutputPath>/<inference id>.out`: one key per inference id, so a request processed
    twice writes the same object."""
    return _under(config["OutputConfig"]["S3OutputPath"], inference_id + OUTPUT_SUFFIX)


def failure_location(config: dict, inference_id: str) -> str:
    """`<S3FailurePath>/<inference id>-error.out`; under S3OutputPath when there is no failure path."""
    output = config["OutputConfig"]
    return _under(output.get("S3FailurePath") or output["S3OutputPath"], inference_id + FAILURE_SUFFIX)


def _under(prefix: str, name: str) -> str:
    return f"{prefix.rstrip('/')}/{name}"
