"""compose.yaml, offline: the stand-in base images and the control-plane image are built locally
(scripts/compose-images.sh --offline; cached by tag), the stack comes up under a project name of
its own on free ports of 127.0.0.1, serves /readyz and runs a boto3 training job to Completed with
its model in S3, which another account's key cannot read: its S3 port is the gateway, and
SeaweedFS behind it takes only the platform key. `down -v` plus a sweep by label leave nothing of
it behind."""
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import docker
import pytest
from botocore.exceptions import ClientError

from devstack.stack import LOOPBACK, PROJECT_DIR, free_port, lasting_port
from runtime import labels
from tests.conftest import read_env_file
from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status
from tests.e2e.hosting import NO_RETRIES, Hosting, invoke_json, wait_for_endpoint

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # probe_image

COMPOSE_IMAGES_SCRIPT = PROJECT_DIR / "scripts" / "compose-images.sh"
BUILD_TIMEOUT = 1800  # the first build makes a Debian root filesystem
UP_TIMEOUT = 900
READY_TIMEOUT = 180
# SeaweedFS listens on each of these ports and on the port + 10000 (gRPC).
WEED_PORT_VARIABLES = (
    "SAGEPORT_WEED_S3_PORT", "SAGEPORT_WEED_MASTER_PORT", "SAGEPORT_WEED_VOLUME_PORT",
    "SAGEPORT_WEED_FILER_PORT", "SAGEPORT_WEED_ADMIN_PORT",
)
OTHER_ACCOUNT_ID = "210987654321"  # the compose header's example
WEED_GRPC_OFFSET = 10000
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"
# The first test builds the stand-ins and the image from nothing (minutes on 2 cores).
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT + UP_TIMEOUT + READY_TIMEOUT)


@dataclass(frozen=True)
class ComposeStack:
    project: str
    data_dir: Path
    environment: dict[str, str]  # what `docker-compose` was run with

    @property
    def endpoint_url(self) -> str:
        return f"http://{LOOPBACK}:{self.environment['SAGEPORT_PORT']}"

    def compose(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["docker-compose", "--project-name", self.project, "--file", str(PROJECT_DIR / "compose.yaml"),
             *args],
            cwd=PROJECT_DIR, env=self.environment, capture_output=True, text=True, timeout=timeout,
        )

    def client_env(self) -> dict[str, str]:
        """The env file the api container wrote into the data dir, as `source` would read it."""
        return read_env_file(self.data_dir / "env")

    def client(self, service_name: str, **kwargs):
        """A boto3 client configured from the env file alone ("sagemaker", "sagemaker-runtime", "s3"),
        unless the keyword arguments say otherwise (another key, another endpoint)."""
        env = self.client_env()
        options = {
            "endpoint_url": env[f"AWS_ENDPOINT_URL_{service_name.upper().replace('-', '_')}"],
            "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
            "region_name": env["AWS_DEFAULT_REGION"],
            **kwargs,
        }
        return boto3.client(service_name, **options)

    def create_access_key(self, account_id: str) -> tuple[str, str]:
        """A new key of `account_id`, made as the compose header says (`exec api ... createaccesskey`)."""
        created = self.compose("exec", "-T", "api", "python", "manage.py", "createaccesskey",
                               "--account-id", account_id)
        assert created.returncode == 0, created.stderr[-4000:]
        access_key_id, secret_access_key, _account_id = created.stdout.split()
        return access_key_id, secret_access_key


@pytest.fixture(scope="module")
def compose_stack(shell_algo_image) -> Iterator[ComposeStack]:
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose is missing: scripts/bootstrap.sh installs it")
    subprocess.run(
        [str(COMPOSE_IMAGES_SCRIPT), "--offline"], cwd=PROJECT_DIR, check=True, timeout=BUILD_TIMEOUT
    )
    data_dir = Path(tempfile.mkdtemp(prefix="sageport-compose-"))
    stack = ComposeStack(
        project=f"sageport-test-{uuid.uuid4().hex[:8]}",
        data_dir=data_dir,
        environment=_compose_environment(data_dir),
    )
    try:
        up = stack.compose("up", "--detach", "--build", timeout=UP_TIMEOUT)
        assert up.returncode == 0, f"docker-compose up failed:\n{up.stderr[-4000:]}"
        _wait_until_ready(stack)
        yield stack
    finally:
        stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "30", timeout=300)
        _remove_what_the_stack_left(stack)
        shutil.rmtree(data_dir, ignore_errors=True)


def test_the_compose_stack_runs_a_training_job_with_the_files_it_writes(compose_stack, shell_algo_image):
    env = compose_stack.client_env()
    assert env["AWS_ENDPOINT_URL_SAGEMAKER"] == compose_stack.endpoint_url
    assert env["AWS_ENDPOINT_URL_S3"] == f"http://{LOOPBACK}:{compose_stack.environment['SAGEPORT_S3_PORT']}"
    sagemaker, s3 = compose_stack.client("sagemaker"), compose_stack.client("s3")
    sdk_config = json.loads(Path(env["SAGEMAKER_USER_CONFIG_OVERRIDE"]).read_text())
    default_bucket = sdk_config["SageMaker"]["PythonSDK"]["Modules"]["Session"]["DefaultS3Bucket"]
    s3.head_bucket(Bucket=default_bucket)  # created by the api container at its start
    name = unique_name("compose")
    script = 'echo "weights of $TRAINING_JOB_NAME" > /opt/ml/model/weights.txt'

    sagemaker.create_training_job(**shell_job(name, shell_algo_image, default_bucket, script))
    job = wait_for_status(sagemaker, name, timeout=240)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    key = f"output/{name}/output/model.tar.gz"
    assert job["ModelArtifacts"]["S3ModelArtifacts"] == f"s3://{default_bucket}/{key}"
    assert read_tar_gz(s3, default_bucket, key) == {"weights.txt": f"weights of {name}\n".encode()}
    # The worker wrote it with the platform key; the bucket stays the default key's account's.
    other_key = compose_stack.create_access_key(OTHER_ACCOUNT_ID)
    other = compose_stack.client("s3", config=NO_RETRIES, **_key_options(*other_key))
    assert _s3_error_code(other.get_object, Bucket=default_bucket, Key=key) == "AccessDenied"
    assert _s3_error_code(other.list_objects_v2, Bucket=default_bucket) == "AccessDenied"
    assert default_bucket not in [bucket["Name"] for bucket in other.list_buckets()["Buckets"]]


def test_the_compose_s3_port_refuses_requests_not_signed_with_a_sageport_key(compose_stack):
    env = compose_stack.client_env()
    forger = compose_stack.client("s3", config=NO_RETRIES,
                                  **_key_options(env["AWS_ACCESS_KEY_ID"], "a-wrong-secret"))
    stranger = compose_stack.client("s3", config=NO_RETRIES,
                                    **_key_options("AKIAUNKNOWNKEY000000", "not-a-secret"))

    assert _unsigned_get(f"{env['AWS_ENDPOINT_URL_S3']}/") == (403, "AccessDenied")
    assert _s3_error_code(forger.list_buckets) == "SignatureDoesNotMatch"
    assert _s3_error_code(stranger.list_buckets) == "InvalidAccessKeyId"
    # Behind the gateway, SeaweedFS knows no key but the platform's: a user's own key is refused.
    store_url = f"http://{LOOPBACK}:{compose_stack.environment['SAGEPORT_WEED_S3_PORT']}"
    store = compose_stack.client("s3", config=NO_RETRIES, endpoint_url=store_url)
    assert _s3_error_code(store.list_buckets) == "InvalidAccessKeyId"


def test_the_compose_stack_serves_an_endpoint_that_answers_invocations(compose_stack, probe_image):
    hosting = Hosting(compose_stack.client("sagemaker"))
    model = hosting.model(probe_image, {"PROBE_TAG": "compose"})
    name = hosting.endpoint(hosting.config(("AllTraffic", model, 1, 1.0)))
    try:
        wait_for_endpoint(hosting.sagemaker, name, timeout=180)

        # The API container reaches the model container on the port it published on 127.0.0.1.
        answer = invoke_json(compose_stack.client("sagemaker-runtime", config=NO_RETRIES), name)

        assert (answer["tag"], answer["variant"]) == ("compose", "AllTraffic")
    finally:
        hosting.delete_all()


def test_the_secret_key_lives_in_the_data_dir_and_survives_recreating_the_api(compose_stack):
    key_file = compose_stack.data_dir / "secret_key"
    before = key_file.read_text()

    recreated = compose_stack.compose("up", "--detach", "--force-recreate", "--no-deps", "api", timeout=300)
    assert recreated.returncode == 0, recreated.stderr[-4000:]
    _wait_until_ready(compose_stack)

    assert key_file.read_text() == before
    assert "TrainingJobSummaries" in compose_stack.client("sagemaker").list_training_jobs()


def test_stopping_the_stack_reaches_the_api_server_and_celery_through_the_init(compose_stack):
    engine = docker.from_env()
    selector = {"label": f"{COMPOSE_PROJECT_LABEL}={compose_stack.project}"}
    containers = {c.labels["com.docker.compose.service"]: c for c in engine.containers.list(filters=selector)}
    assert {"api", "worker", "beat", "s3gateway", "seaweedfs", "redis", "postgres"} <= set(containers)
    assert all(c.attrs["HostConfig"]["Init"] for c in containers.values())

    stopped = compose_stack.compose("stop", "--timeout", "60", "api", "worker", "beat", timeout=300)

    assert stopped.returncode == 0, stopped.stderr[-4000:]
    for service in ("api", "worker", "beat"):
        containers[service].reload()
        # A graceful exit, not the SIGKILL that follows an unheard SIGTERM (137).
        assert containers[service].attrs["State"]["ExitCode"] == 0, service


def _compose_environment(data_dir: Path) -> dict[str, str]:
    """A clean environment (the test session's own SAGEPORT_* settings must not leak into the
    stack) naming the data dir and a free port for every service."""
    environment = {name: os.environ[name] for name in ("PATH", "HOME", "DOCKER_HOST") if name in os.environ}
    environment["SAGEPORT_DATA_DIR"] = str(data_dir)
    environment["SAGEPORT_STACK_ID"] = _stack_id(data_dir)
    environment["SAGEPORT_S3_SECRET_ACCESS_KEY"] = secrets.token_hex(32)  # compose has no default
    for name in ("SAGEPORT_PORT", "SAGEPORT_RUNTIME_PORT", "SAGEPORT_S3_PORT", "SAGEPORT_REDIS_PORT",
                 "SAGEPORT_POSTGRES_PORT"):
        environment[name] = str(lasting_port())
    taken = {int(port) for port in environment.values() if port.isdigit()}
    for name in WEED_PORT_VARIABLES:
        port = _free_port_with_grpc_twin(taken)
        taken |= {port, port + WEED_GRPC_OFFSET}
        environment[name] = str(port)
    return environment


def _key_options(access_key_id: str, secret_access_key: str) -> dict[str, str]:
    return {"aws_access_key_id": access_key_id, "aws_secret_access_key": secret_access_key}


def _s3_error_code(call, **kwargs) -> str:
    with pytest.raises(ClientError) as raised:
        call(**kwargs)
    return raised.value.response["Error"]["Code"]


def _unsigned_get(url: str) -> tuple[int, str]:
    """The status and S3 error code of a request with no signature at all."""
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(url, timeout=10)
    body = raised.value.read().decode(errors="replace")
    code = body.partition("<Code>")[2].partition("</Code>")[0]
    return raised.value.code, code


def _stack_id(data_dir: Path) -> str:
    """The label on every container and network the stack's worker creates."""
    return f"compose-{data_dir.name}"


def _free_port_with_grpc_twin(taken: set[int]) -> int:
    for _ in range(100):
        port = free_port()
        twin = port + WEED_GRPC_OFFSET
        if twin <= 65535 and not taken & {port, twin} and _is_free(twin):
            return port
    raise AssertionError("no free port whose +10000 twin is free too")


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def _wait_until_ready(stack: ComposeStack) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{stack.endpoint_url}/readyz", timeout=2) as response:
                if response.status == 200 and (stack.data_dir / "env").exists():
                    return
        except urllib.error.HTTPError as error:
            last = f"HTTP {error.code}: {error.read()[:500]!r}"
        except OSError as error:
            last = str(error)
        time.sleep(1)
    logs = stack.compose("logs", "--tail", "40").stdout
    raise AssertionError(f"/readyz not ready within {READY_TIMEOUT}s ({last}); logs:\n{logs[-6000:]}")


def _remove_what_the_stack_left(stack: ComposeStack) -> None:
    """What `down -v` does not own: training containers and networks the stack's worker created
    (labelled with its stack id, derived from the data dir), and anything of the project left
    by a `down` that failed."""
    engine = docker.from_env()
    selectors = (f"{labels.STACK}={_stack_id(stack.data_dir)}", f"{COMPOSE_PROJECT_LABEL}={stack.project}")
    for selector in selectors:
        for container in engine.containers.list(all=True, filters={"label": selector}, ignore_removed=True):
            container.remove(force=True)
        for network in engine.networks.list(filters={"label": selector}):
            network.remove()
        for volume in engine.volumes.list(filters={"label": selector}):
            volume.remove(force=True)
