"""Session-wide services for the tests: SeaweedFS, Redis, the example images and the live stack.

The session's environment (free ports, a temporary data dir, short timings) is exported by
tests/settings.py before Django reads its settings. Every server runs under one `Supervisor`
and is stopped at the end of the session, together with any container or network the session
left behind."""
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import docker
import pytest
from django.conf import settings

from devstack.stack import (
    LOOPBACK,
    PROJECT_DIR,
    Supervisor,
    api_spec,
    beat_spec,
    create_default_bucket,
    platform_s3_key,
    redis_spec,
    runtime_spec,
    s3_specs,
    worker_spec,
)
from gateway.network import SERVICES_NETWORK
from runtime import labels

# Logs kept at each failure, and a dead S3 service failing its tests fast (tests/diagnostics.py).
from tests.diagnostics import keep_logs, pytest_runtest_makereport, s3_store_answers  # noqa: F401

BUILD_IMAGES_SCRIPT = PROJECT_DIR / "scripts" / "build-images.sh"
CRASH_RECOVERY_SECONDS = 90


@dataclass(frozen=True)
class S3Service:
    endpoint_url: str
    store_url: str  # SeaweedFS's own S3 port, behind the gateway: the tests' cluster has a gateway of its own


@dataclass(frozen=True)
class RedisService:
    url: str


# What a test needs, judged by the fixtures it uses (their whole closure): `pytest -m "not docker
# and not s3"` is the fast loop, starting neither SeaweedFS nor containers. The stack's worker
# talks to the engine, so `stack` needs Docker; every end-to-end test does. A test that calls the
# engine asks for `docker_engine`.
NEEDS_BY_FIXTURE = {
    "s3": {"s3_service"},
    "docker": {
        "docker_engine", "busybox_image", "python_image", "toolkit_image", "pytorch_mpi_image",
        "pytorch_tier_image", "pytorch_elastic_image", "python_sagemaker_image", "stack",
    },
}
E2E_DIR = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in NEEDS_BY_FIXTURE.items():
            if used & fixtures:
                item.add_marker(marker)
        if E2E_DIR in Path(item.path).parents:
            item.add_marker("docker")


@pytest.fixture(scope="session", autouse=True)
def session_data_dir(request) -> Iterator[Path]:
    """The session's data dir (settings.DATA_DIR), removed with what it holds at the end; the
    servers' logs of a session with failures are kept first, to find out why."""
    data_dir = Path(settings.DATA_DIR)
    yield data_dir
    if request.session.testsfailed and (kept := keep_logs(data_dir)):
        print(f"\nThe servers' logs of this session are kept in {kept}")
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def docker_engine() -> docker.DockerClient:
    """The Docker engine's client; asking for it marks the test `docker`."""
    return docker.from_env()


@pytest.fixture(scope="session")
def supervisor(session_data_dir):
    """Restarts a server that dies, as `manage.py runstack` does; `kill` takes one out for good."""
    supervisor = Supervisor(log_dir=session_data_dir / "logs")
    with supervisor.watching():
        yield supervisor
        supervisor.stop_all()
    _remove_docker_objects_left_by_this_session()
    free_tier_memory(settings.SAGEPORT_STACK_ID)


@pytest.fixture(scope="session")
def s3_service(supervisor) -> S3Service:
    # The gateway reads the stack's database (keys, bucket owners): create it first, in a child
    # process (pytest-django points this process's connection at the test database, while the
    # live stack uses the session's own SQLite file).
    _manage("runstack", "--prepare-only")
    store, gateway = s3_specs(Path(settings.DATA_DIR), settings.SAGEPORT_S3_ENDPOINT_URL, platform_s3_key())
    for spec in (store, gateway):
        supervisor.start(spec)
    (store_port,) = store.ports
    return S3Service(endpoint_url=settings.SAGEPORT_S3_ENDPOINT_URL, store_url=f"http://{LOOPBACK}:{store_port}")


@pytest.fixture(scope="session")
def s3_client(s3_service):
    """An S3 client with the platform's own key pair (the one the worker uses)."""
    return boto3.client(
        "s3",
        endpoint_url=s3_service.endpoint_url,
        aws_access_key_id=settings.SAGEPORT_S3_ACCESS_KEY_ID,
        aws_secret_access_key=settings.SAGEPORT_S3_SECRET_ACCESS_KEY,
        region_name=settings.SAGEPORT_S3_REGION,
    )


@pytest.fixture(scope="session")
def redis_service(supervisor) -> RedisService:
    supervisor.start(redis_spec(Path(settings.DATA_DIR), settings.CELERY_BROKER_URL))
    return RedisService(url=settings.CELERY_BROKER_URL)


@pytest.fixture(scope="session")
def busybox_image() -> str:
    return _build_example_image("busybox")


@pytest.fixture(scope="session")
def python_image() -> str:
    return _build_example_image("python")


@pytest.fixture(scope="session")
def toolkit_image() -> str:
    """Debian's python with the sagemaker-training toolkit: SDK script mode's container."""
    return _build_example_image("sagemaker-training")


@pytest.fixture(scope="session")
def python_sagemaker_image() -> str:
    """Debian's python (3.11, the client's) with the SageMaker SDK v2: remote functions' jobs."""
    return _build_example_image("python-sagemaker")


@pytest.fixture(scope="session")
def pytorch_mpi_image() -> str:
    """The toolkit with PyTorch (CPU), OpenMPI, mpi4py and sshd: MPI and model-parallel jobs."""
    return _build_example_image("pytorch-mpi")


@pytest.fixture(scope="session")
def pytorch_tier_image() -> str:
    """torch 2.11.0 with AWS's amzn-sagemaker-checkpointing: examples/tiered-checkpointing/train.py
    under torchrun (two ranks, gloo) is its entry point."""
    return _build_example_image("pytorch-tier")


@pytest.fixture(scope="session")
def pytorch_elastic_image() -> str:
    """torch 2.11.0 with AWS's elastic agent: `hyperpodrun` serves the agent's API on 8080 and runs
    examples/elastic-training/train.py (DDP, gloo) when told to start."""
    return _build_example_image("pytorch-elastic")


@dataclass(frozen=True)
class LiveStack:
    """The API, the data plane, a Celery worker and Celery beat on the session's Redis and SeaweedFS."""

    endpoint_url: str
    runtime_url: str  # the data plane's (InvokeEndpoint)
    s3_endpoint_url: str
    access_key_id: str
    secret_access_key: str
    account_id: str
    region: str
    data_dir: Path
    supervisor: Supervisor = field(repr=False)

    def client(self, service_name: str, **kwargs):
        """A boto3 client for "sagemaker", "sagemaker-runtime", "logs" or "s3" on this stack,
        signed with the default access key unless the keyword arguments say otherwise."""
        options = {
            "endpoint_url": self._endpoint_url(service_name),
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
            "region_name": self.region,
            **kwargs,
        }
        return boto3.client(service_name, **options)

    def _endpoint_url(self, service_name: str) -> str:
        if service_name == "s3":
            return self.s3_endpoint_url
        return self.runtime_url if service_name == "sagemaker-runtime" else self.endpoint_url

    def kill_worker(self) -> None:
        """SIGKILL the Celery worker and its pool processes, as a crash of the machine would; it
        stays down (no restart) until `start_worker`."""
        self.supervisor.kill("worker")

    def crash(self, name: str) -> tuple[float, float]:
        """SIGKILL a server's whole process group and wait (bounded) until the supervisor has
        restarted it and it is ready again; returns both moments (time.monotonic())."""
        old_pid = self.supervisor.pid(name)
        killed_at = time.monotonic()
        self.supervisor.signal(name, signal.SIGKILL)
        deadline = killed_at + CRASH_RECOVERY_SECONDS
        while self.supervisor.pid(name) in (None, old_pid):  # a new pid is a ready server
            assert time.monotonic() < deadline, f"{name} was not restarted within {CRASH_RECOVERY_SECONDS}s"
            time.sleep(0.1)
        return killed_at, time.monotonic()

    def start_worker(self, **env: str) -> None:
        """Start the worker again; `env` overrides its settings (e.g. a long poll interval)."""
        self.supervisor.start(worker_spec(self.data_dir, env={**WORKER_ENV, **env}))

    def create_access_key(self, account_id: str) -> tuple[str, str]:
        output = _manage("createaccesskey", "--account-id", account_id)
        access_key_id, secret_access_key, _account_id = output.split()
        return access_key_id, secret_access_key

    def delete_access_key(self, access_key_id: str) -> None:
        """Delete a key in the live stack's database, as the Django admin would."""
        _manage("shell", "-c", "from accounts.models import AccessKey; "
                f"AccessKey.objects.get(access_key_id={access_key_id!r}).delete()")


# The session's worker (node A) may spread a job that no single node holds over several nodes
# (tests/e2e/test_training_spanning_nodes.py); a job that fits on one node is placed as without it.
WORKER_ENV = {"SAGEPORT_MULTI_NODE_NETWORK": "overlay"}


@pytest.fixture(scope="session")
def stack(supervisor, s3_service, redis_service) -> Iterator[LiveStack]:
    data_dir = Path(settings.DATA_DIR)
    endpoint_url = f"http://{LOOPBACK}:{settings.SAGEPORT_PORT}"
    # The data dir was prepared by `s3_service` (again here, it would empty the metrics directory
    # under the running gateway).
    create_default_bucket(data_dir)
    user_env = read_env_file(data_dir / "env")
    api = api_spec(data_dir, settings.SAGEPORT_API_ADDRESS, settings.SAGEPORT_PORT)
    runtime = runtime_spec(data_dir, settings.SAGEPORT_API_ADDRESS, settings.SAGEPORT_RUNTIME_PORT)
    servers = (api, runtime, worker_spec(data_dir, env=WORKER_ENV), beat_spec(data_dir))
    for spec in servers:
        supervisor.start(spec)
    yield LiveStack(
        endpoint_url=endpoint_url,
        runtime_url=user_env["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"],
        s3_endpoint_url=s3_service.endpoint_url,
        access_key_id=user_env["AWS_ACCESS_KEY_ID"],
        secret_access_key=user_env["AWS_SECRET_ACCESS_KEY"],
        account_id=settings.SAGEPORT_DEFAULT_ACCOUNT_ID,
        region=user_env["AWS_DEFAULT_REGION"],
        data_dir=data_dir,
        supervisor=supervisor,
    )
    # Together, before the storage and Redis they use: the worker's warm shutdown and the API's
    # take seconds each, which one after the other added up at the end of every session.
    supervisor.stop_together(spec.name for spec in servers)


def read_env_file(path: Path) -> dict[str, str]:
    """The variables of an `export NAME=value` file, as a shell sourcing it would see them."""
    variables = {}
    for line in path.read_text().splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            name, _, value = words[1].partition("=")
            variables[name] = value
    return variables


def _manage(*args: str) -> str:
    completed = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=PROJECT_DIR, check=True, stdout=subprocess.PIPE, text=True
    )
    return completed.stdout


def _build_example_image(name: str) -> str:
    """Build (or find in the local engine) one example image; return its tag."""
    completed = subprocess.run(
        [str(BUILD_IMAGES_SCRIPT), name], check=True, stdout=subprocess.PIPE, text=True, timeout=1800
    )
    return completed.stdout.strip().splitlines()[-1]


def free_tier_memory(stack_id: str) -> None:
    """The checkpoint tier keeps checkpoints in memory (clusters/tier_service.py) until its cluster
    turns it off; a stack (the session's, the test cluster's) that stopped before that, or whose
    lost node never came back, leaves them to no one."""
    pattern = f"sageport-tier-{stack_id}-*"
    for directory in Path(settings.SAGEPORT_TIER_MEMORY_DIR).glob(pattern):
        shutil.rmtree(directory, ignore_errors=True)


def _remove_docker_objects_left_by_this_session() -> None:
    """Remove the containers and networks this session's runtime created: they carry the
    session's stack id (other sessions sharing the engine have their own)."""
    try:
        client = docker.from_env()
    except docker.errors.DockerException:
        return  # no engine, so nothing can have been left in it
    selector = {"label": f"{labels.STACK}={settings.SAGEPORT_STACK_ID}"}
    for container in client.containers.list(all=True, filters=selector, ignore_removed=True):
        container.remove(force=True)
    for network in client.networks.list(filters=selector):
        network.remove()
    _remove_services_network_if_unused(client)


def _remove_services_network_if_unused(client: docker.DockerClient) -> None:
    """The services network belongs to the engine (every stack on it shares it, gateway/network.py):
    removed only when no container is attached, e.g. another stack's; recreated on demand."""
    for network in client.networks.list(names=[SERVICES_NETWORK], greedy=True):  # greedy: with containers
        if network.name == SERVICES_NETWORK and not network.attrs.get("Containers"):
            try:
                network.remove()
            except docker.errors.APIError:
                pass  # a container joined it meanwhile: it stays
