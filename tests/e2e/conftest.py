"""Fixtures for end-to-end tests: a scriptable training image, buckets and job helpers."""

import subprocess
import time
import uuid

import pytest

from devstack.stack import PROJECT_DIR
from tests.e2e import sdk

SHELL_ALGO_TAG = "sageport-test/shell-algo:latest"

# An algorithm image whose behaviour each test gives as a shell script in the ALGO_SCRIPT
# environment variable. Its ENTRYPOINT is exec-form, so the container's PID 1 is the shell that
# receives `train` as "$1" and the signals StopTrainingJob sends.
SHELL_ALGO_DOCKERFILE = """
FROM {base}
COPY algo.sh /algo.sh
ENTRYPOINT ["/bin/sh", "/algo.sh"]
"""
SHELL_ALGO_ENTRYPOINT = 'eval "$ALGO_SCRIPT"\n'
SDK_V3_VENV_SCRIPT = PROJECT_DIR / "scripts" / "sdk-v3-venv.sh"


@pytest.fixture(scope="session")
def shell_algo_image(busybox_image, tmp_path_factory) -> str:
    context = tmp_path_factory.mktemp("shell-algo")
    (context / "Dockerfile").write_text(SHELL_ALGO_DOCKERFILE.format(base=busybox_image))
    (context / "algo.sh").write_text(SHELL_ALGO_ENTRYPOINT)
    subprocess.run(
        ["docker", "build", "-q", "-t", SHELL_ALGO_TAG, str(context)], check=True, capture_output=True
    )
    return SHELL_ALGO_TAG


@pytest.fixture(scope="session")
def sdk_v3_python() -> str:
    """The SageMaker SDK v3's Python (its own virtualenv: v3 and v2 share the package name)."""
    completed = subprocess.run(
        [str(SDK_V3_VENV_SCRIPT)], check=True, stdout=subprocess.PIPE, text=True, timeout=1800
    )
    return str(PROJECT_DIR / completed.stdout.strip())


@pytest.fixture
def sdk_session(stack, monkeypatch):
    """The SageMaker SDK (v2) configured by the stack's env file alone (tests/e2e/sdk.py)."""
    return sdk.sdk_session(stack, monkeypatch)


@pytest.fixture(scope="session")
def sagemaker(stack):
    return stack.client("sagemaker")


@pytest.fixture(scope="session")
def s3(stack):
    return stack.client("s3")


@pytest.fixture
def bucket(s3) -> str:
    name = f"test-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# The settings of a node's worker that a test makes lose: it declares a shorter silence than the
# session's 20 s (it beats every second, tests/settings.py), so that its loss shows sooner;
# nothing else changes (capacity/nodes.py).
LOST_FAST = {"SAGEPORT_NODE_LOST_AFTER_SECONDS": "8"}
TERMINAL = {"Completed", "Failed", "Stopped"}


def wait_for_status(sagemaker, name: str, statuses=TERMINAL, timeout: float = 120.0) -> dict:
    """Poll DescribeTrainingJob (bounded) until the job reaches one of `statuses`."""
    deadline = time.monotonic() + timeout
    while True:
        job = sagemaker.describe_training_job(TrainingJobName=name)
        if job["TrainingJobStatus"] in statuses or job["SecondaryStatus"] in statuses:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{name} still {job['TrainingJobStatus']}/{job['SecondaryStatus']} after {timeout}s"
            )
        time.sleep(0.3)


def training_request(name: str, image: str, bucket: str, **overrides) -> dict:
    request = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": image, "TrainingInputMode": "File"},
        "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
        "OutputDataConfig": {"S3OutputPath": f"s3://{bucket}/output"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 10},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
    }
    request.update(overrides)
    return request


def shell_job(name: str, image: str, bucket: str, script: str, **overrides) -> dict:
    return training_request(name, image, bucket, Environment={"ALGO_SCRIPT": script}, **overrides)


def read_tar_gz(s3, bucket: str, key: str) -> dict[str, bytes]:
    """The regular files of a gzipped tar in S3, by member name."""
    import io
    import tarfile

    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as archive:
        return {
            member.name.removeprefix("./"): archive.extractfile(member).read()
            for member in archive.getmembers()
            if member.isfile()
        }
