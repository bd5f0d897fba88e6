"""What a container can reach, with real containers: plain boto3 inside a training or serving
container, given nothing by the user, finds its region, Sageport's S3 and API through the
services network, and credentials of its own account that stop working when its job or endpoint
ends; a network-isolated job gets none of it; containers on the services network do not reach
each other.

The image is Debian's python3 with boto3 unpacked from wheels the host downloads once (cached by
tag: the probe's and botocore's versions), running tests/e2e/aws_probe/aws_probe.py."""

import hashlib
import json
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import botocore
import pytest
from botocore.exceptions import ClientError

from devstack.stack import PROJECT_DIR
from tests.e2e.conftest import read_tar_gz, training_request, unique_name, wait_for_status
from tests.e2e.hosting import wait_for_endpoint

pytest_plugins = ["tests.e2e.hosting_fixtures"]

PROBE = Path(__file__).parent / "aws_probe" / "aws_probe.py"
PYTHON_BASE = "sageport-examples/python-base:bookworm"  # made by scripts/build-images.sh
AWS_PROBE_DOCKERFILE = f"""
FROM {PYTHON_BASE}
ENV PYTHONUNBUFFERED=1
COPY wheels /tmp/wheels
# The image has no pip: pure-Python wheels are zip files unpacked into site-packages.
RUN python3 -c "import glob, site, zipfile; \\
[zipfile.ZipFile(w).extractall(site.getsitepackages()[0]) for w in glob.glob('/tmp/wheels/*.whl')]" \\
    && rm -rf /tmp/wheels
COPY aws_probe.py /opt/program/aws_probe.py
ENTRYPOINT ["python3", "/opt/program/aws_probe.py"]
"""
# Everything a non-isolated container is given (gateway/environment.py).
GIVEN = {
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",  # S3's too, for clients that read only the global one (s3torchconnector)
    "AWS_ENDPOINT_URL_SAGEMAKER",
    "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME",
    "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS",
    "AWS_ENDPOINT_URL_CLOUDWATCH",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL_IAM",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_EC2_METADATA_DISABLED",
}
REVOCATION_SECONDS = 30  # the API remembers a key for SAGEPORT_ACCESS_KEY_CACHE_SECONDS (5 s)


@pytest.fixture(scope="session")
def aws_probe_image(python_image, tmp_path_factory) -> str:
    version = hashlib.sha256(PROBE.read_bytes() + AWS_PROBE_DOCKERFILE.encode()).hexdigest()[:12]
    tag = f"sageport-test/aws-probe:{botocore.__version__}-{version}"
    if subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0:
        return tag
    context = tmp_path_factory.mktemp("aws-probe")
    shutil.copytree(_boto3_wheels(), context / "wheels")
    (context / "Dockerfile").write_text(AWS_PROBE_DOCKERFILE)
    (context / "aws_probe.py").write_bytes(PROBE.read_bytes())
    subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(context)], check=True, capture_output=True, timeout=600
    )
    return tag


def _boto3_wheels() -> Path:
    """boto3 (the host's version) and its dependencies as wheels for the image's Python 3.11,
    downloaded once into .sageport/cache/wheels/ (kept between runs; ignored by git)."""
    import boto3

    wheels = PROJECT_DIR / ".sageport" / "cache" / "wheels" / f"boto3-{boto3.__version__}"
    if not any(wheels.glob("boto3-*.whl")):
        wheels.mkdir(parents=True, exist_ok=True)
        download = ["download", "--quiet", "--only-binary=:all:", "--python-version", "3.11"]
        platform = ["--platform", "manylinux2014_x86_64", "--dest", str(wheels)]
        pip = [sys.executable, "-m", "pip", *download, *platform, f"boto3=={boto3.__version__}"]
        subprocess.run(pip, check=True, timeout=600)
    return wheels


def given(s3, bucket: str, job_name: str) -> dict:
    model = read_tar_gz(s3, bucket, f"output/{job_name}/output/model.tar.gz")
    return json.loads(model["given.json"])


def ask_the_probe(runtime, endpoint: str, bucket: str, key: str) -> dict:
    """The serving probe's answer for the object s3://bucket/key (aws_probe.py's `serve`)."""
    body = json.dumps({"bucket": bucket, "key": key})
    answer = runtime.invoke_endpoint(EndpointName=endpoint, ContentType="application/json", Body=body)
    return json.loads(answer["Body"].read())


def wait_until_refused(client_call) -> ClientError:
    """The error a call signed with revoked credentials gets (bounded wait for the key cache)."""
    deadline = time.monotonic() + REVOCATION_SECONDS
    while True:
        try:
            client_call()
        except ClientError as error:
            return error
        assert time.monotonic() < deadline, f"still accepted {REVOCATION_SECONDS}s after the revocation"
        time.sleep(0.5)


def test_a_training_job_uses_s3_with_only_what_the_platform_gives_it(
    stack, sagemaker, s3, bucket, aws_probe_image
):
    s3.put_object(Bucket=bucket, Key="in/data.txt", Body=b"hello from the host")
    name = unique_name("aws")
    environment = {"BUCKET": bucket, "IN_KEY": "in/data.txt", "OUT_KEY": "out/data.txt"}  # no credentials
    sagemaker.create_training_job(**training_request(name, aws_probe_image, bucket, Environment=environment))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert s3.get_object(Bucket=bucket, Key="out/data.txt")["Body"].read() == b"HELLO FROM THE HOST"
    report = given(s3, bucket, name)
    assert set(report["aws_variables"]) == GIVEN
    assert report["region"] == stack.region
    handed = report["credentials"]
    assert handed["key"] not in (stack.access_key_id, "sageport")  # its own key, never another's
    # The key's own session token (CRT clients require one): boto3 sent it with the S3 calls
    # above, and the gateway accepted it (protocol/sigv4.session_token_for).
    assert handed["token"] and handed["token"] != handed["key"]
    # In-container code asking STS who it is (the BYO notebooks' account lookup) gets its account.
    assert report["caller"]["Account"] == stack.account_id


def test_a_training_jobs_code_acts_as_the_jobs_role(stack, sagemaker, s3, bucket, aws_probe_image):
    """On SageMaker a training container's credentials are a session of the job's RoleArn named
    `SageMaker`, whose ARN names the role without its path (a public report of a training job
    refused S3: `User: arn:aws:sts::<account>:assumed-role/AmazonSageMaker-ExecutionRole-
    20250704T175024/SageMaker is not authorized to perform: s3:GetObject`, for the role
    `…:role/service-role/AmazonSageMaker-ExecutionRole-20250704T175024`); IAM GetRole on that name,
    the SDK's get_execution_role() lookup, answers the role's ARN with its path
    (tests/unit/identity/test_container_roles.py cites the rest)."""
    role = f"ProbeTrainingRole-{uuid.uuid4().hex[:8]}"
    role_arn = f"arn:aws:iam::{stack.account_id}:role/service-role/{role}"
    name = unique_name("role")
    sagemaker.create_training_job(**training_request(name, aws_probe_image, bucket, RoleArn=role_arn))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    report = given(s3, bucket, name)
    assert report["caller"]["Arn"] == f"arn:aws:sts::{stack.account_id}:assumed-role/{role}/SageMaker"
    assert report["role"] == role_arn


def test_a_training_jobs_code_streams_an_endpoints_answer_as_a_client_does(
    sagemaker, runtime, s3, bucket, aws_probe_image, stream_image, hosting
):
    """A job's code calling InvokeEndpointWithResponseStream (a pipeline step asking a deployed
    model, say) is served as on SageMaker: its runtime endpoint leads to the data plane, which
    streams, not to the API's port, which does not."""
    endpoint = hosting.endpoint(hosting.config(("AllTraffic", hosting.model(stream_image), 1, 1.0)))
    wait_for_endpoint(sagemaker, endpoint)
    body = json.dumps({"inputs": "hello", "parameters": {"max_new_tokens": 6}})
    name = unique_name("stream")
    environment = {"STREAM_ENDPOINT": endpoint, "STREAM_BODY": body}
    sagemaker.create_training_job(**training_request(name, aws_probe_image, bucket, Environment=environment))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    parts = given(s3, bucket, name)["stream"]
    whole = runtime.invoke_endpoint(EndpointName=endpoint, Body=body, ContentType="application/json")["Body"]
    assert "".join(parts) == whole.read().decode() and len(parts) > 1  # as the tokens came, not one piece


def test_a_jobs_credentials_stop_working_when_it_ends(stack, sagemaker, s3, bucket, aws_probe_image):
    name = unique_name("aws")
    sagemaker.create_training_job(**training_request(name, aws_probe_image, bucket))
    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Completed"
    handed = given(s3, bucket, name)["credentials"]
    as_the_job = stack.client(
        "sagemaker", aws_access_key_id=handed["key"], aws_secret_access_key=handed["secret"]
    )

    error = wait_until_refused(lambda: as_the_job.describe_training_job(TrainingJobName=name))

    assert error.response["Error"]["Code"] == "UnrecognizedClientException"


def test_an_ended_jobs_credentials_are_refused_by_s3(stack, sagemaker, s3, bucket, aws_probe_image):
    if _bundled_s3_accepts_any_key(stack, bucket):
        pytest.skip("the bundled S3 accepts any key: S3 authentication is not turned on in this stack")
    name = unique_name("aws")
    sagemaker.create_training_job(**training_request(name, aws_probe_image, bucket))
    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Completed"
    handed = given(s3, bucket, name)["credentials"]
    as_the_job = stack.client("s3", aws_access_key_id=handed["key"], aws_secret_access_key=handed["secret"])

    wait_until_refused(lambda: as_the_job.list_objects_v2(Bucket=bucket))


def test_a_jobs_credentials_do_not_read_another_accounts_objects(
    stack, sagemaker, s3, bucket, aws_probe_image
):
    if _bundled_s3_accepts_any_key(stack, bucket):
        pytest.skip("the bundled S3 accepts any key: S3 authentication is not turned on in this stack")
    other_account = "210987654321"
    key_id, secret = stack.create_access_key(other_account)
    as_other = stack.client("s3", aws_access_key_id=key_id, aws_secret_access_key=secret)
    theirs = f"{other_account}-{uuid.uuid4().hex[:12]}"  # in that account's bucket namespace
    wait_until_accepted(lambda: as_other.create_bucket(Bucket=theirs))  # its S3 identity syncs on commit
    as_other.put_object(Bucket=theirs, Key="secret.txt", Body=b"not yours")
    name = unique_name("cross")
    environment = {"FORBIDDEN_BUCKET": theirs, "FORBIDDEN_KEY": "secret.txt"}

    sagemaker.create_training_job(**training_request(name, aws_probe_image, bucket, Environment=environment))

    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Completed"
    assert given(s3, bucket, name)["forbidden"] == "AccessDenied"


def wait_until_accepted(call) -> None:
    deadline = time.monotonic() + REVOCATION_SECONDS
    while True:
        try:
            call()
            return
        except ClientError:
            assert time.monotonic() < deadline, f"still refused after {REVOCATION_SECONDS}s"
            time.sleep(0.5)


def _bundled_s3_accepts_any_key(stack, bucket: str) -> bool:
    stranger = stack.client("s3", aws_access_key_id="AKIANOBODYATALL0000", aws_secret_access_key="x" * 40)
    try:
        stranger.list_objects_v2(Bucket=bucket)
    except ClientError:
        return False
    return True


def test_a_network_isolated_job_gets_no_endpoints_credentials_or_network(
    sagemaker, s3, bucket, aws_probe_image
):
    name = unique_name("isolated")
    sagemaker.create_training_job(
        **training_request(name, aws_probe_image, bucket, EnableNetworkIsolation=True)
    )

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert given(s3, bucket, name) == {"aws_variables": [], "gateway_reachable": False}


def test_a_serving_container_reads_s3_with_its_endpoints_credentials_until_it_is_deleted(
    stack, sagemaker, runtime, s3, bucket, aws_probe_image, hosting, docker_engine
):
    s3.put_object(Bucket=bucket, Key="model/answer.txt", Body=b"42")
    model = hosting.model(aws_probe_image)
    endpoint = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))
    wait_for_endpoint(sagemaker, endpoint)

    answer = ask_the_probe(runtime, endpoint, bucket, "model/answer.txt")

    assert (answer["object"], answer["region"]) == ("42", stack.region)
    as_the_endpoint = stack.client(
        "sagemaker", aws_access_key_id=answer["key"], aws_secret_access_key=answer["secret"]
    )
    as_the_endpoint.describe_endpoint(EndpointName=endpoint)  # works while the endpoint lives
    sagemaker.delete_endpoint(EndpointName=endpoint)
    sagemaker.get_waiter("endpoint_deleted").wait(
        EndpointName=endpoint, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    error = wait_until_refused(lambda: as_the_endpoint.list_endpoints())
    assert error.response["Error"]["Code"] == "UnrecognizedClientException"


def test_a_serving_container_acts_as_its_models_execution_role(
    stack, sagemaker, runtime, s3, bucket, aws_probe_image, hosting
):
    """On SageMaker a serving container's credentials are a session of its model's
    ExecutionRoleArn (botocore's CreateModel: "the IAM role that SageMaker can assume to access
    model artifacts and docker image for deployment"), named `SageMaker` here as a training job's
    is (no public report shows a serving container's session name)."""
    s3.put_object(Bucket=bucket, Key="model/answer.txt", Body=b"42")
    role = f"ProbeServingRole-{uuid.uuid4().hex[:8]}"
    model = unique_name("rolemodel")
    sagemaker.create_model(
        ModelName=model,
        PrimaryContainer={"Image": aws_probe_image},
        ExecutionRoleArn=f"arn:aws:iam::{stack.account_id}:role/{role}",
    )
    endpoint = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))
    wait_for_endpoint(sagemaker, endpoint)

    answer = ask_the_probe(runtime, endpoint, bucket, "model/answer.txt")

    assert answer["caller"] == f"arn:aws:sts::{stack.account_id}:assumed-role/{role}/SageMaker"


def test_containers_on_the_services_network_do_not_reach_each_other(
    sagemaker, s3, bucket, aws_probe_image, hosting, docker_engine
):
    model = hosting.model(aws_probe_image)
    endpoint = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))
    wait_for_endpoint(sagemaker, endpoint)
    serving = _services_address(docker_engine, endpoint)
    name = unique_name("peer")

    sagemaker.create_training_job(
        **training_request(name, aws_probe_image, bucket, Environment={"PEER": serving})
    )

    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Completed"
    report = given(s3, bucket, name)
    assert (report["gateway_reachable"], report["peer_reachable"]) == (True, False)


def _services_address(docker_engine, endpoint: str) -> str:
    """The serving container's address on the services network (passed to the other container:
    the host itself never sends anything there)."""
    for container in docker_engine.containers.list(filters={"label": "sageport.role=serve"}):
        if container.labels.get("sageport.resource", "").endswith(f":endpoint/{endpoint}"):
            return container.attrs["NetworkSettings"]["Networks"]["sageport-services"]["IPAddress"]
    raise AssertionError(f"no serving container for {endpoint}")
