"""A test cluster that is several hosts' worth of engines (issue 25): the `cluster` fixture.

- `CLUSTER_SIZE` Docker engines, each in a network namespace of its own on one private network
  (tests/e2e/engines.py), joined into one Docker Swarm whose engines are all managers (an odd
  number: the swarm keeps its quorum when one is lost), holding the images the module asks for
  (its `cluster_images` fixture; loaded once per cached engine slot, not per session).
- A control plane of its own on the host, on free ports of 127.0.0.1: the API, the data plane,
  Celery beat and an S3 gateway, on a private PostgreSQL (tests/e2e/postgres.py) as the shared
  database, the session's Redis (a database index of its own, so that the session's worker never
  takes the cluster's tasks) as the broker and the session's SeaweedFS as the store. No worker runs
  on the API host: every node is a `runnode`.
- One Sageport node per engine (`manage.py runnode`, docs/operations.md "Adding a node"), on the
  host with DOCKER_HOST at its engine's socket, so its containers run only there; its address is
  its engine's on the private network (the API host reaches published ports there). Each node
  declares one GPU, so a job of one-GPU instances spreads one instance per node, with
  SAGEPORT_MULTI_NODE_NETWORK=overlay. Every node's `<data>/volumes` (where a HyperPodPyTorchJob's
  persistentVolumeClaims live, elastic/replicas.py) is one shared directory (`Cluster.claims`),
  as every HyperPod node mounts one FSx file system: a DCP checkpoint the ranks of several nodes
  write together is whole for the next world, wherever its ranks run.
- What the engine's containers reach: the services network's gateway 169.254.170.2 is an
  address inside the engine's namespace, where a real node's worker runs its forwarder. Here the
  worker runs on the host, so a forwarder per node runs with its listening sockets inside the
  engine's namespace (tests/e2e/netns_forwarder.py) and its upstream connections on the host.
  A node's checkpoint tier service (when a HyperPod cluster of these nodes enables the tier) runs
  inside the engine's namespace (SAGEPORT_ENGINE_NETNS): it listens on the engine's tier network
  and, for its peers, on the engine's address.

One cluster for every module that uses it (`SharedCluster`): started on the first test that asks
for it and stopped once the last test of the session that uses it is done (`pytest_runtest_teardown`,
else at the session's end). Each module loses a node on purpose; before it hands the cluster to the
next module, the `cluster` fixture makes it as a fresh one (`Cluster.make_fresh`): no endpoint or
running job left, every lost node revived (its engine restarted as a fresh one of its slot, its
forwarder and worker started, the worker rejoining the engine to the swarm by itself, registered
and live again), no container of
a resource on any engine. Everything is stopped by the supervisor (by pid) and removed afterwards:
the processes, the engines' containers, networks and swarm, the namespaces, the database."""
import dataclasses
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import kombu.exceptions
import psycopg
import pytest
import redis
from celery import Celery
from django.conf import settings

from devstack.stack import (
    LOOPBACK,
    PROJECT_DIR,
    ServiceSpec,
    Supervisor,
    _django_env,
    api_spec,
    beat_spec,
    lasting_port,
    runtime_spec,
    s3_gateway_spec,
)
from tests.conftest import LiveStack, free_tier_memory, read_env_file
from tests.e2e import engines
from tests.e2e.hosting import wait_for_endpoint, wait_until
from tests.e2e.postgres import Database, private_postgres

CLUSTER_SIZE = 3
NODE_GPUS = "0"  # one GPU per node: a job of one-GPU instances (ml.p3.2xlarge) spreads one per node
BROKER_DATABASE = 1  # the session's worker consumes database 0 of the same Redis
API_WORKERS = 2  # the cluster's API serves a few tests at a time: fewer processes to boot
START_SECONDS = 120  # the API, beat and three Celery workers booting at once on two busy cores
REVIVE_SECONDS = 90  # an engine restarted, its worker booted, rejoined to the swarm and registered
CLEAR_SECONDS = 120  # endpoints deleted and jobs stopped: their containers removed by their nodes
SETTLED_ENDPOINT = frozenset({"InService", "Failed", "OutOfService"})  # DeleteEndpoint accepted
SCHEMA_CACHE_DIR = Path("/var/tmp/sageport-test-postgres")


@dataclass
class ClusterNode:
    name: str
    engine: engines.Engine
    worker: str  # its Celery worker's name
    specs: list[ServiceSpec] = field(default_factory=list)  # its forwarder and runnode
    lost: bool = False  # `Cluster.lose`: its servers are gone


@dataclass
class Cluster:
    stack: LiveStack  # the control plane: `.client("sagemaker")`, ...
    supervisor: Supervisor
    env: dict[str, str]  # the control plane's settings, which every node shares
    broker: Celery  # a client of the cluster's broker (not the session's)
    nodes: list[ClusterNode] = field(default_factory=list)
    readiness: list[Callable[[], bool]] = field(default_factory=list)  # of what was started
    started: list[str] = field(default_factory=list)  # the servers' names

    def client(self, service_name: str, **kwargs):
        return self.stack.client(service_name, **kwargs)

    def start(self, spec: ServiceSpec) -> None:
        """Start a server without waiting for it (`wait_ready` waits for all): they boot together."""
        self.supervisor.start(dataclasses.replace(spec, ready=None))
        self.started.append(spec.name)
        if spec.ready:
            self.readiness.append(spec.ready)

    def wait_ready(self) -> None:
        wait_until(lambda: all(ready() for ready in self.readiness), timeout=START_SECONDS,
                   what="the cluster's servers and nodes to answer")

    def stop(self) -> None:
        """Stop every server at once (a Celery worker's warm shutdown, the API's, take seconds)."""
        lost = {spec.name for node in self.nodes if node.lost for spec in node.specs}
        names = [name for name in self.started if name not in lost]
        with ThreadPoolExecutor(max_workers=len(names) or 1) as pool:
            list(pool.map(self.supervisor.stop, names))

    @property
    def claims(self) -> Path:
        """The file system every node mounts at `<data>/volumes` (`_start_node`)."""
        return self.stack.data_dir / "claims"

    def node(self, name: str) -> ClusterNode:
        return next(node for node in self.nodes if node.name == name)

    def lose(self, name: str) -> None:
        """The node's host is lost, as one that loses power or its link: its worker dies (SIGKILL:
        no goodbye, its heartbeats stop) and its engine drops off the private network, its
        containers running on there unreached. Undone by `revive`, before the next module's tests."""
        node = self.node(name)
        node.lost = True
        for spec in reversed(node.specs):
            self.supervisor.kill(spec.name)
        engines.run("ip", "-n", node.engine.namespace, "link", "set", engines.ENGINE_LINK, "down")

    def make_fresh(self) -> None:
        """What a module left, undone, so that the next one starts as on a new cluster: its
        endpoints deleted, its running jobs stopped, its lost nodes revived, and no container of
        any resource left on an engine (all removed by their nodes, as on AWS)."""
        started = time.monotonic()
        _delete_endpoints(self.client("sagemaker"))
        _stop_training_jobs(self.client("sagemaker"))
        lost = [node for node in self.nodes if node.lost]
        for node in lost:
            self.revive(node)
        wait_until(lambda: not self.containers(), timeout=CLEAR_SECONDS,
                   what="no container of a resource left on the cluster's engines")
        revived = ", ".join(node.name for node in lost) or "none"
        print(f"\nthe test cluster was made fresh in {time.monotonic() - started:.1f} s (revived: {revived})")

    def revive(self, node: ClusterNode) -> None:
        """A lost node's host back as a new one: link up, its engine restarted with no container
        nor swarm state (its images kept), then its forwarder and worker started. Nothing joins
        its engine to the swarm here: its worker does, as it registers (capacity/swarm_join.py).
        Waited for until the worker answers and has registered, live, on its engine's new swarm
        node, and the swarm counts every engine ready (the lost one's former swarm node removed by
        Sageport: capacity/swarm.py)."""
        started = time.monotonic()
        live = next(other.engine for other in self.nodes if not other.lost)
        engines.run("ip", "-n", node.engine.namespace, "link", "set", engines.ENGINE_LINK, "up")
        node.engine.restart()
        for spec in node.specs:
            self.supervisor.start(dataclasses.replace(spec, ready=None))
        node.lost = False
        wait_until(lambda: _answers(self.broker, node.worker) and self._registered(node)
                   and engines.swarm_ready(live, len(self.nodes)), timeout=REVIVE_SECONDS,
                   what=f"{node.name}'s worker to answer and register again, its engine back in the swarm")
        print(f"\n{node.name} was revived in {time.monotonic() - started:.1f} s")

    def _registered(self, node: ClusterNode) -> bool:
        """The control plane counts the node live on its engine's swarm node (capacity/nodes.py;
        its table is the app label's, `workers`, capacity/apps.py)."""
        swarm_node = node.engine.client.info()["Swarm"]["NodeID"]
        with psycopg.connect(self.env["DATABASE_URL"]) as connection:
            row = connection.execute(
                "SELECT lost_at IS NULL, swarm_node_id FROM workers_node WHERE name = %s", (node.name,)
            ).fetchone()
        return bool(swarm_node) and row == (True, swarm_node)

    def containers(self, arn: str = "") -> list:
        """The containers of a resource (of any, without `arn`) on every engine, each with
        `.engine_node` (its node)."""
        found = []
        for node in self.nodes:
            selector = {"label": f"sageport.resource={arn}" if arn else "sageport.resource"}
            for container in node.engine.client.containers.list(all=True, filters=selector,
                                                                 ignore_removed=True):
                container.engine_node = node.name
                found.append(container)
        return found


@pytest.fixture(scope="module")
def cluster_images() -> tuple[str, ...]:
    """The images every engine of the module's cluster holds; a module overrides it."""
    return ()


@pytest.fixture(scope="module")
def cluster(cluster_images, shared_cluster) -> Cluster:
    """The session's cluster, as a fresh one, its engines holding the module's images."""
    cluster = shared_cluster.get()
    with ThreadPoolExecutor(max_workers=len(cluster.nodes)) as pool:
        list(pool.map(lambda node: _hold(node.engine, cluster_images), cluster.nodes))
    cluster.make_fresh()
    return cluster


@pytest.fixture(scope="session")
def shared_cluster(request, s3_service, redis_service) -> Iterator["SharedCluster"]:
    engines.require_namespaces()
    shared = SharedCluster(request.session, s3_service.store_url, redis_service.url)
    request.config.stash[SHARED_CLUSTER] = shared
    try:
        yield shared
    finally:
        shared.close()


class SharedCluster:
    """The one cluster of the session, started on first use (`get`) and stopped by `close`."""

    def __init__(self, session, store_url: str, redis_url: str):
        self.session, self.store_url, self.redis_url = session, store_url, redis_url
        self.stack = ExitStack()
        self.cluster: Cluster | None = None

    def get(self) -> Cluster:
        if self.cluster is None:
            with self.stack:  # undone at once if the start fails
                self.cluster = _start_cluster(self.stack, self.session, self.store_url, self.redis_url)
                self.stack = self.stack.pop_all()
        return self.cluster

    def close(self) -> None:
        self.cluster = None
        with self.stack:
            self.stack = ExitStack()


SHARED_CLUSTER = pytest.StashKey[SharedCluster]()


@pytest.hookimpl(trylast=True)  # after the test's own fixtures are torn down
def pytest_runtest_teardown(item, nextitem) -> None:
    """Stop the cluster once no test left to run uses it (its engines and workers would load the
    machine under the tests that follow). Items of a module that uses it run together, and the
    modules that use it are next to each other (tests/e2e/test_cluster*.py). Other modules have
    `cluster` fixtures of their own (a HyperPod cluster), so the fixture looked for is
    `shared_cluster`, which only this one's users reach."""
    shared = item.config.stash.get(SHARED_CLUSTER, None)
    needed_next = nextitem is not None and "shared_cluster" in nextitem.fixturenames
    if shared is not None and shared.cluster is not None and not needed_next:
        shared.close()


def _hold(engine: engines.Engine, images: tuple[str, ...]) -> None:
    for image in images:
        engine.ensure_image(image)


def _start_cluster(stack: ExitStack, session, store_url: str, redis_url: str) -> Cluster:
    """The engines (holding no image yet: the modules name theirs), their swarm, the database, the
    control plane and a node per engine, all ready; undone by `stack`."""
    timer, stopping = SetupTimer(), StopTimer()
    stack.callback(stopping.report)
    data_dir = stack.enter_context(_data_dir(session))
    database = stack.enter_context(ExitStack())  # entered by the thread below
    stack.callback(stopping.reached, "the database")
    with ThreadPoolExecutor(max_workers=1) as pool:
        # Alongside the engines, whose start is mostly waiting: initdb and Django's are CPU.
        env = pool.submit(timer.timed, "database", _database, database, data_dir, redis_url)
        with timer.phase("engines"):
            network = stack.enter_context(engines.wire(CLUSTER_SIZE))
            (data_dir / "logs").mkdir(exist_ok=True)  # the engines' logs kept with the servers'
            members = stack.enter_context(engines.engines_on(network, log_dir=data_dir / "logs"))
            stack.callback(stopping.reached, "the engines and their wire")
            engines.swarm(members, managers=len(members))
        env = env.result()
    # Once the nodes have stopped (the stack unwinds in reverse): a node lost and never revived
    # leaves its tier service's memory behind.
    stack.callback(free_tier_memory, env["SAGEPORT_STACK_ID"])
    cluster = stack.enter_context(_control_plane(data_dir, env, store_url))
    stack.callback(stopping.reached, "the servers and nodes")
    with timer.phase("servers and nodes"):
        for index, engine in enumerate(members):
            cluster.nodes.append(_start_node(cluster, f"cluster-node-{index + 1}", engine))
        cluster.wait_ready()
    timer.report()
    return cluster


def _delete_endpoints(sagemaker) -> None:
    """Delete every endpoint and wait until they are gone (DeleteEndpoint of one still being
    created or updated is refused: waited for first)."""
    names = [e["EndpointName"] for page in sagemaker.get_paginator("list_endpoints").paginate()
             for e in page["Endpoints"]]
    for name in names:
        wait_for_endpoint(sagemaker, name, statuses=SETTLED_ENDPOINT, timeout=CLEAR_SECONDS)
        sagemaker.delete_endpoint(EndpointName=name)
    for name in names:
        sagemaker.get_waiter("endpoint_deleted").wait(EndpointName=name,
                                                      WaiterConfig={"Delay": 1, "MaxAttempts": CLEAR_SECONDS})


def _stop_training_jobs(sagemaker) -> None:
    """Stop every training job still in progress and wait until it has stopped."""
    pages = sagemaker.get_paginator("list_training_jobs").paginate(StatusEquals="InProgress")
    names = [job["TrainingJobName"] for page in pages for job in page["TrainingJobSummaries"]]
    for name in names:
        sagemaker.stop_training_job(TrainingJobName=name)
    for name in names:
        sagemaker.get_waiter("training_job_completed_or_stopped").wait(
            TrainingJobName=name, WaiterConfig={"Delay": 1, "MaxAttempts": CLEAR_SECONDS})


class SetupTimer:
    """How long each phase of the cluster's set-up took (some run side by side): printed once it
    is up (`-s`, or with a failed test's output), for keeping it bounded."""

    def __init__(self):
        self.began = time.monotonic()
        self.phases: list[tuple[str, float]] = []

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        self.phases.append((name, time.monotonic() - started))

    def timed(self, name: str, function: Callable, *args):
        with self.phase(name):
            return function(*args)

    def report(self) -> None:
        parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.phases)
        print(f"\nthe test cluster was set up in {time.monotonic() - self.began:.1f} s: {parts}")


class StopTimer:
    """How long each part of the cluster took to stop (printed once it is stopped): each
    `reached(name)` is called as `name` starts to stop, the next one as it is done."""

    def __init__(self):
        self.marks: list[tuple[str, float]] = []

    def reached(self, name: str) -> None:
        self.marks.append((name, time.monotonic()))

    def report(self) -> None:
        ends = [at for _, at in self.marks[1:]] + [time.monotonic()]
        parts = ", ".join(f"{name} {end - at:.1f} s"
                          for (name, at), end in zip(self.marks, ends, strict=True))
        print(f"\nthe test cluster was stopped: {parts}")


@contextmanager
def _data_dir(session) -> Iterator[Path]:
    """The control plane's and the nodes' data; their logs are kept when a test of the session
    failed, as the session's are."""
    data_dir = Path(tempfile.mkdtemp(prefix="sgcl"))
    try:
        yield data_dir
    finally:
        if session.testsfailed:
            _keep_logs(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


def _database(stack: ExitStack, data_dir: Path, redis_url: str) -> dict[str, str]:
    """A private PostgreSQL (stopped by `stack`) prepared as `runstack` prepares it (migrated, the
    default access key, `<data>/env`; tests create their buckets), and the control plane's
    settings on it, which every node shares."""
    database = stack.enter_context(private_postgres())
    env = {
        **_django_env(data_dir),
        "DATABASE_URL": database.url,
        "SAGEPORT_PORT": str(lasting_port()),
        "SAGEPORT_RUNTIME_PORT": str(lasting_port()),
        "SAGEPORT_S3_ENDPOINT_URL": f"http://{LOOPBACK}:{lasting_port()}",
        "SAGEPORT_REDIS_URL": redis_url.rsplit("/", 1)[0] + f"/{BROKER_DATABASE}",
        # The session's store: its only identity is the session's platform key.
        "SAGEPORT_S3_ACCESS_KEY_ID": settings.SAGEPORT_S3_ACCESS_KEY_ID,
        "SAGEPORT_S3_SECRET_ACCESS_KEY": settings.SAGEPORT_S3_SECRET_ACCESS_KEY,
        "SAGEPORT_STACK_ID": f"cluster-{uuid.uuid4().hex[:8]}",
        "SAGEPORT_MULTI_NODE_NETWORK": "overlay",
    }
    _prepare(database, data_dir, env)
    return env


@contextmanager
def _control_plane(data_dir: Path, env: dict[str, str], store_url: str) -> Iterator[Cluster]:
    """The API, the data plane, the S3 gateway and beat on the prepared database, started (not
    waited for: `Cluster.wait_ready`); all stopped afterwards."""
    supervisor = Supervisor(log_dir=data_dir / "logs")
    cluster = Cluster(stack=_live_stack(data_dir, env, supervisor), supervisor=supervisor, env=env,
                      broker=Celery(broker=env["SAGEPORT_REDIS_URL"]))
    s3_port = int(env["SAGEPORT_S3_ENDPOINT_URL"].rsplit(":", 1)[1])
    servers = (api_spec(data_dir, LOOPBACK, int(env["SAGEPORT_PORT"]), workers=API_WORKERS),
               runtime_spec(data_dir, LOOPBACK, int(env["SAGEPORT_RUNTIME_PORT"])),
               s3_gateway_spec(data_dir, LOOPBACK, s3_port, store_url), beat_spec(data_dir))
    with supervisor.watching():
        try:
            for spec in servers:
                cluster.start(dataclasses.replace(spec, name=f"cluster-{spec.name}", env={**spec.env, **env}))
            yield cluster
        finally:
            cluster.stop()
            supervisor.stop_all()  # what a failed start left


def _keep_logs(data_dir: Path) -> None:
    kept = data_dir.with_name(data_dir.name + "-failed-logs")
    for logs in [data_dir / "logs", *data_dir.glob("nodes/*/logs")]:
        shutil.copytree(logs, kept / logs.relative_to(data_dir), dirs_exist_ok=True)
    print(f"\nThe test cluster's logs are kept in {kept}")


def _live_stack(data_dir: Path, env: dict[str, str], supervisor: Supervisor) -> LiveStack:
    user_env = read_env_file(data_dir / "env")
    return LiveStack(
        endpoint_url=f"http://{LOOPBACK}:{env['SAGEPORT_PORT']}",
        runtime_url=user_env["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"],
        s3_endpoint_url=env["SAGEPORT_S3_ENDPOINT_URL"],
        access_key_id=user_env["AWS_ACCESS_KEY_ID"],
        secret_access_key=user_env["AWS_SECRET_ACCESS_KEY"],
        account_id=settings.SAGEPORT_DEFAULT_ACCOUNT_ID,
        region=user_env["AWS_DEFAULT_REGION"],
        data_dir=data_dir,
        supervisor=supervisor,
    )


def _prepare(database: Database, data_dir: Path, env: dict[str, str]) -> None:
    """`runstack --prepare-only`, on the dump of a database it prepared before when the
    migrations are the same (`SCHEMA_CACHE_DIR`), which it then finds migrated."""
    migrations = sorted(PROJECT_DIR.glob("*/migrations/*.py"))
    key = hashlib.sha256(b"".join(path.read_bytes() for path in migrations)).hexdigest()[:16]
    cached = SCHEMA_CACHE_DIR / f"sageport-{key}.sql"
    if cached.exists():
        database.restore(cached)
    prepared = subprocess.run(
        [sys.executable, "manage.py", "runstack", "--prepare-only"],
        cwd=PROJECT_DIR, env={**os.environ, **env}, capture_output=True, text=True, timeout=180,
    )
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    if not cached.exists():
        SCHEMA_CACHE_DIR.mkdir(parents=True, exist_ok=True)
        database.dump(cached)


def _start_node(cluster: Cluster, name: str, engine: engines.Engine) -> ClusterNode:
    """`runnode` for the engine's node, and the forwarder for its containers inside the engine's
    namespace."""
    data_dir = cluster.stack.data_dir / "nodes" / name
    data_dir.mkdir(parents=True)
    cluster.claims.mkdir(exist_ok=True)
    (data_dir / "volumes").symlink_to(cluster.claims, target_is_directory=True)
    env = {
        **cluster.env,
        **_django_env(data_dir),
        "DOCKER_HOST": engine.socket,
        "SAGEPORT_API_URL": cluster.stack.endpoint_url,
        "SAGEPORT_NODE_NAME": name,
        "SAGEPORT_NODE_ADDRESS": engine.address,
        "SAGEPORT_NODE_GPUS": NODE_GPUS,
        "SAGEPORT_TIER_PEER_PORT": str(lasting_port()),
        # Its tier service listens on its engine's tier network and for peers on its address,
        # both in the engine's namespace.
        "SAGEPORT_ENGINE_NETNS": engine.netns_path,
    }
    worker = f"sageport-worker-{name}@{socket.gethostname()}"
    node = ClusterNode(name=name, engine=engine, worker=worker, specs=[
        ServiceSpec(name=f"forwarder-{name}", argv=[sys.executable, "-m", "tests.e2e.netns_forwarder",
                                                     engine.netns_path], env=env),
        ServiceSpec(name=f"runnode-{name}", argv=[sys.executable, "manage.py", "runnode"], env=env,
                    ready=lambda: _answers(cluster.broker, worker), stop_timeout=40.0),
    ])
    for spec in node.specs:
        cluster.start(spec)
    return node


def _answers(broker: Celery, worker: str) -> bool:
    try:
        return bool(broker.control.ping(destination=[worker], timeout=0.5))
    except (kombu.exceptions.OperationalError, redis.RedisError, OSError):
        return False  # not connected yet: asked again
