"""GPUs of transform jobs end to end: the test node declares four GPUs (tests/settings.py,
env-only mode: the container's NVIDIA_VISIBLE_DEVICES selects them, no DeviceRequest is made).

SageMaker runs batch transform on accelerated instance types (botocore's TransformInstanceType:
ml.g4dn, ml.p3, ml.g5 ...), and answers a request beyond what can be provisioned with
ResourceLimitExceeded. Here a transform instance holds its type's GPUs of its node exclusively
(the model's own NVIDIA_VISIBLE_DEVICES=all cannot widen them), a job that needs GPUs others hold
waits InProgress until they are given back, and a stopped job gives them back."""

import time

import docker

from tests.e2e.conftest import unique_name
from tests.e2e.transform_requests import transform_request, wait_for_transform

pytest_plugins = ["tests.e2e.hosting_fixtures", "tests.e2e.transform_fixtures"]  # transformer_image

GROUP = "/aws/sagemaker/TransformJobs"


def _gpu_job(name: str, model_name: str, bucket: str, prefix: str, instance_type: str) -> dict:
    return transform_request(
        name,
        model_name,
        bucket,
        prefix,
        TransformOutput={"S3OutputPath": f"s3://{bucket}/out-{name}/"},
        TransformResources={"InstanceType": instance_type, "InstanceCount": 1},
    )


def _container_environment(arn: str) -> dict[str, str]:
    """The environment Docker was asked to run the job's one container with (and no
    DeviceRequest, in this mode)."""
    (container,) = docker.from_env().containers.list(filters={"label": f"sageport.resource={arn}"})
    assert container.attrs["HostConfig"]["DeviceRequests"] is None
    return dict(entry.split("=", 1) for entry in container.attrs["Config"]["Env"])


def _started(logs, name: str) -> bool:
    """The job is sending: its data log (written once its container answered /ping) exists."""
    try:
        streams = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{name}/")["logStreams"]
    except logs.exceptions.ResourceNotFoundException:  # no transform job has logged yet
        return False
    return any(stream["logStreamName"].endswith("/data-log") for stream in streams)


def _said(logs, name: str) -> str:
    streams = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{name}/")["logStreams"]
    (stream,) = [item["logStreamName"] for item in streams if not item["logStreamName"].endswith("/data-log")]
    events = logs.get_log_events(logGroupName=GROUP, logStreamName=stream)["events"]
    return "\n".join(event["message"] for event in events)


def test_gpu_transform_jobs_hold_their_own_gpus_wait_for_them_and_give_them_back(
    sagemaker, s3, bucket, model, stack
):
    s3.put_object(Bucket=bucket, Key="slow/a.csv", Body=b"sleep\n")
    s3.put_object(Bucket=bucket, Key="fast/a.csv", Body=b"x,1\ny,2\n")
    model_name = model(NVIDIA_VISIBLE_DEVICES="all")  # asks for every GPU: gets its type's
    logs = stack.client("logs")

    one = unique_name("gpu1")  # ml.g4dn.xlarge: one GPU, held while its request hangs
    sagemaker.create_transform_job(**_gpu_job(one, model_name, bucket, "slow/", "ml.g4dn.xlarge"))
    deadline = time.monotonic() + 60
    while not _started(logs, one):  # the data log's first line: the container passed /ping
        assert time.monotonic() < deadline, sagemaker.describe_transform_job(TransformJobName=one)
        time.sleep(0.2)
    arn = sagemaker.describe_transform_job(TransformJobName=one)["TransformJobArn"]
    assert _container_environment(arn)["NVIDIA_VISIBLE_DEVICES"] == "0"

    four = unique_name("gpu4")  # ml.g5.12xlarge: four GPUs, one of which `one` holds
    sagemaker.create_transform_job(**_gpu_job(four, model_name, bucket, "fast/", "ml.g5.12xlarge"))
    never = unique_name("gpu8")  # ml.p3.16xlarge: eight GPUs, more than any node has
    sagemaker.create_transform_job(**_gpu_job(never, model_name, bucket, "fast/", "ml.p3.16xlarge"))
    failed = wait_for_transform(sagemaker, never)
    assert failed["TransformJobStatus"] == "Failed"
    assert failed["FailureReason"] == (
        "ResourceLimitExceeded: ml.p3.16xlarge x 1 needs 8 NVIDIA GPUs on one node, "
        "and no node has that many."
    )
    assert sagemaker.describe_transform_job(TransformJobName=four)["TransformJobStatus"] == "InProgress"

    sagemaker.stop_transform_job(TransformJobName=one)
    assert wait_for_transform(sagemaker, one)["TransformJobStatus"] == "Stopped"
    done = wait_for_transform(sagemaker, four)  # ran once `one` gave its GPU back: all four are its
    assert done["TransformJobStatus"] == "Completed", done.get("FailureReason")
    assert "gpus=0,1,2,3" in _said(logs, four)
    assert s3.get_object(Bucket=bucket, Key=f"out-{four}/a.csv.out")["Body"].read() == b"X,1\nY,2\n"

