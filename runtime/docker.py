"""`ContainerRuntime` on a Docker engine: the only module that imports `docker`.

Every call goes through `_engine_errors()`, which turns "cannot reach the engine" into
`RuntimeUnavailable` (transient); the operations translate the engine's refusals into the
permanent errors of base.py with the engine's own reason, so they can become a FailureReason."""
import ipaddress
import itertools
import logging
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

import docker
import requests
from django.conf import settings
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import DeviceRequest, IPAMConfig, IPAMPool
from docker.types import Mount as DockerMount
from docker.utils import parse_repository_tag

from runtime import cpusets, host_locks
from runtime import labels as keys
from runtime.base import (
    ContainerEvent,
    ContainerSpec,
    ContainerStartFailed,
    ContainerState,
    ContainerStats,
    EngineFault,
    LogLine,
    MultiHostNetworkUnavailable,
    NoSuchImage,
    RuntimeError_,
    RuntimeUnavailable,
    SwarmJoinInfo,
    SwarmMembership,
)
from runtime.pull_progress import PullProgress, PullReport

log = logging.getLogger(__name__)

_NEVER = "0001-01-01T00:00:00Z"  # the engine's zero time: "not started / not finished yet"
_HTTP_CONFLICT = 409
_HTTP_SERVICE_UNAVAILABLE = 503  # what the engine answers a swarm call outside a swarm
_CONNECT_TIMEOUT_SECONDS = 10  # the events stream itself waits without limit
_HOLDING_CPUS = ("created", "running", "paused", "restarting")  # a container's states that hold its cpuset

# Least privilege for every algorithm and model container (training and serving alike). The
# process stays root inside (the SageMaker contract: images expect it), but it is a root with
# Docker's default capabilities minus those a tenant could use against the host or its neighbours:
#   kept  CHOWN, DAC_OVERRIDE, FOWNER, FSETID  root's file powers over its own tree and over the
#         bind-mounted /opt/ml dirs, which belong to the worker's (host) user: writing the model,
#         checkpoints and output there, unpacking archives, pip/conda installs at start-up.
#   kept  SETUID, SETGID  servers that drop to an unprivileged user (nginx, gunicorn workers,
#         `su`/`gosu` in entrypoints).
#   kept  KILL  root signalling its own processes that run as another user (nginx's workers).
#   kept  NET_BIND_SERVICE  a server binding a port below 1024 inside its own network namespace.
#   dropped NET_RAW (raw sockets: ARP/IP spoofing on a shared bridge), MKNOD (device nodes; FIFOs
#         need no capability), SYS_CHROOT, AUDIT_WRITE, SETFCAP, SETPCAP.
#   given back only to a container that runs sshd (`ContainerSpec.ssh_server`: MPI jobs, where the
#         training toolkit's mpirun reaches the other instances over SSH): SYS_CHROOT (sshd's
#         privilege separation chroots its pre-authentication child) and AUDIT_WRITE (its login
#         records). Both are in Docker's default set, as on SageMaker.
# `no-new-privileges` stops setuid binaries and file capabilities from regaining anything dropped.
CAPABILITIES_KEPT = (
    "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID", "KILL", "NET_BIND_SERVICE",
)
SSH_SERVER_CAPABILITIES = ("SYS_CHROOT", "AUDIT_WRITE")
SECURITY_OPTIONS = ("no-new-privileges:true",)


class DockerRuntime:
    def __init__(self, client: docker.DockerClient | None = None, pull_timeout_seconds: float | None = None):
        self._client = client
        self._client_lock = threading.Lock()
        self._engine_id_seen: str | None = None
        self._pull_timeout_seconds = pull_timeout_seconds or settings.SAGEPORT_IMAGE_PULL_TIMEOUT_SECONDS

    @property
    def client(self) -> docker.DockerClient:
        """Created on first use, so importing the worker never needs a running engine."""
        with self._client_lock:
            if self._client is None:
                try:
                    self._client = docker.from_env()
                except DockerException as error:  # from_env() asks the engine for its API version
                    raise RuntimeUnavailable(f"The Docker engine cannot be reached: {error}") from None
            return self._client

    # --- images ---------------------------------------------------------------------------

    def has_image(self, image: str) -> bool:
        with _engine_errors():
            try:
                self.client.images.get(image)
            except ImageNotFound:
                return False
        return True

    def image_id(self, image: str) -> str | None:
        """The local image's content id (`sha256:…`), or None when the engine does not have it."""
        with _engine_errors():
            try:
                return self.client.images.get(image).id
            except ImageNotFound:
                return None

    def pull_image(self, image: str, report: PullReport | None = None) -> None:
        repository, tag = parse_repository_tag(image)
        started = time.monotonic()
        deadline = started + self._pull_timeout_seconds
        next_report = started + settings.SAGEPORT_PULL_PROGRESS_SECONDS
        # A registry the engine cannot reach answers with a DNS or TLS error that names neither
        # the image nor the real cause: say that first.
        failure = (
            f'Unable to pull image "{image}": '
            "it is not in this node's Docker engine, which could not pull it"
        )
        progress = PullProgress()
        with _engine_errors():
            try:
                # Streamed so that the whole pull, not each socket read, is bounded in time.
                messages = self.client.api.pull(repository, tag=tag or "latest", stream=True, decode=True)
                for message in messages:
                    if "error" in message:
                        raise NoSuchImage(f"{failure}: {message['error']}")
                    now = time.monotonic()
                    if now > deadline:
                        raise NoSuchImage(f"{failure}: timed out after {self._pull_timeout_seconds:g} s")
                    progress.add(message)
                    if report is not None and now >= next_report:  # a bounded rate of reports
                        report(progress.summary())
                        next_report = now + settings.SAGEPORT_PULL_PROGRESS_SECONDS
            except APIError as error:
                raise NoSuchImage(f"{failure}: {_reason(error)}") from None

    # --- networks -------------------------------------------------------------------------

    def ensure_network(
        self, name: str, labels: dict[str, str], internal: bool = False, subnets: Sequence[str] = (),
        overlay: bool = False,
    ) -> str:
        with _engine_errors():
            existing = self._network(name)
            if existing is not None:
                return _subnet_of(existing)
            if overlay and not self._swarm_manager(name):
                # A worker engine cannot create it; its containers join the one a manager made
                # (by name, through the swarm), on the subnet that manager's node recorded.
                return subnets[0] if subnets else ""
            with self._creating(name):
                existing = self._network(name)  # made by the caller that held the lock before
                if existing is not None:
                    return _subnet_of(existing)
                return self._create_network(name, labels, internal, subnets, overlay)

    def _create_network(
        self, name: str, labels: dict[str, str], internal: bool, subnets: Sequence[str], overlay: bool,
    ) -> str:
        driver = _overlay_driver() if overlay else {"driver": "bridge"}
        for subnet in subnets or (None,):
            try:
                created = self.client.networks.create(
                    name, internal=internal, labels={**labels, **keys.own()}, ipam=_ipam(subnet, overlay),
                    **driver,
                )
                return _subnet_of(self.client.networks.get(created.id))
            except APIError as error:
                if error.status_code == _HTTP_CONFLICT:  # another host's manager made the overlay
                    return _subnet_of(self._network(name))
                if subnet is None or "overlap" not in _reason(error).lower():
                    raise RuntimeError_(f'Could not create network "{name}": {_reason(error)}') from None
        raise RuntimeError_(f'Could not create network "{name}": every subnet offered is taken')

    def _creating(self, name: str):
        """Held while a network is looked up and created when missing, by one process of the host
        at a time: the engine (API 1.41) lets two concurrent creates of one local name both
        succeed (its duplicate check is not atomic with the create), and then starts no container
        on that name. Unlocked (no lock file to be had), `_network` repairs a shared name."""
        return host_locks.held(f"network-{self._engine_id}", name)

    @property
    def _engine_id(self) -> str:
        """The engine's own id: what a network lock is held on."""
        if self._engine_id_seen is None:
            self._engine_id_seen = self.client.info().get("ID", "")
        return self._engine_id_seen

    def _swarm_manager(self, name: str) -> bool:
        """Whether this engine can create swarm networks (a manager); raises when it is in no swarm."""
        swarm = self.client.info().get("Swarm") or {}
        state = swarm.get("LocalNodeState", "inactive")
        if state != "active":
            raise MultiHostNetworkUnavailable(
                f'Could not create the overlay network "{name}" for instances on several nodes: this '
                f'Docker engine is not in swarm mode (LocalNodeState "{state}"). '
                "SAGEPORT_MULTI_NODE_NETWORK=overlay needs every node's engine in one swarm "
                "(docker swarm init / join, docs/operations.md)."
            )
        return bool(swarm.get("ControlAvailable"))

    def ensure_services_network(self, name: str, subnet: str, gateway: str) -> None:
        labels = {keys.MANAGED: "true", keys.ROLE: keys.SERVICES_ROLE}
        ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=subnet, gateway=gateway)])
        self._ensure_internal_bridge(name, labels, ipam)

    def ensure_gateway_network(self, name: str, labels: dict[str, str]) -> str:
        return _gateway_of(self._ensure_internal_bridge(name, labels, None))

    def _ensure_internal_bridge(self, name: str, labels: dict[str, str], ipam: IPAMConfig | None):
        with _engine_errors():
            existing = self._network(name)
            if existing is not None:
                return existing
            with self._creating(name):
                return self._network(name) or self._create_internal_bridge(name, labels, ipam)

    def _create_internal_bridge(self, name: str, labels: dict[str, str], ipam: IPAMConfig | None):
        try:
            created = self.client.networks.create(
                name,
                driver="bridge",
                # Internal: no route to anywhere through it, only the gateway's own address.
                internal=True,
                ipam=ipam,
                # Containers of different tenants share it: the bridge forwards nothing
                # between them (Docker drops bridge-to-bridge traffic in iptables' FORWARD).
                options={"com.docker.network.bridge.enable_icc": "false"},
                labels=labels,
            )
            return self.client.networks.get(created.id)
        except APIError as error:
            if error.status_code == _HTTP_CONFLICT:  # made meanwhile by a process of another host
                return self._network(name)
            raise RuntimeError_(f'Could not create network "{name}": {_reason(error)}') from None

    def remove_network(self, name: str) -> None:
        with _engine_errors():
            network = self._network(name)
            if network is None:
                return
            try:
                network.remove()
            except NotFound:
                return
            except APIError as error:
                raise RuntimeError_(f'Could not remove network "{name}": {_reason(error)}') from None

    # --- swarm ----------------------------------------------------------------------------

    def swarm_membership(self) -> SwarmMembership | None:
        with _engine_errors():
            swarm = self.client.info().get("Swarm") or {}
        if swarm.get("LocalNodeState") != "active":
            return None
        return SwarmMembership(node_id=swarm.get("NodeID", ""), manager=bool(swarm.get("ControlAvailable")),
                               address=swarm.get("NodeAddr", ""))

    def swarm_state(self) -> str:
        with _engine_errors():
            return (self.client.info().get("Swarm") or {}).get("LocalNodeState", "inactive")

    def swarm_join_info(self) -> SwarmJoinInfo:
        with _engine_errors():
            tokens = self.client.api.inspect_swarm()["JoinTokens"]
            managers = (self.client.info().get("Swarm") or {}).get("RemoteManagers") or []
        return SwarmJoinInfo(manager_token=tokens["Manager"], worker_token=tokens["Worker"],
                             managers={manager["NodeID"]: manager["Addr"] for manager in managers})

    def join_swarm(self, manager_address: str, token: str, advertise_address: str = "") -> None:
        with _engine_errors():
            self.client.api.join_swarm([manager_address], token, advertise_addr=advertise_address or None)

    def leave_swarm(self) -> None:
        with _engine_errors():
            try:
                self.client.api.leave_swarm(force=True)
            except APIError as error:
                if error.status_code != _HTTP_SERVICE_UNAVAILABLE:  # "not part of a swarm": fine
                    raise

    def remove_swarm_node(self, node_id: str) -> None:
        with _engine_errors():
            try:
                node = self.client.api.inspect_node(node_id)
                if node["Spec"].get("Role") == "manager":
                    # The swarm removes no manager that is still a raft member: demote it first.
                    demoted = {**node["Spec"], "Role": "worker"}
                    self.client.api.update_node(node_id, node["Version"]["Index"], demoted)
                self.client.api.remove_node(node_id, force=True)
            except NotFound:
                pass  # already removed

    def find_networks(self, labels: dict[str, str]) -> list[str]:
        with _engine_errors():
            networks = self.client.networks.list(filters=_label_filter(labels))
            return sorted(network.name for network in networks)

    def _network(self, name: str):
        """The network of that exact name (the engine's filter matches substrings). The engine
        lets two concurrent creates of one local name both succeed (its duplicate check is not
        atomic with the create), and then starts no container on that name: it finds it
        ambiguous, asks the swarm and gets `network <name> not found`, on every attempt. Of
        several, the oldest is kept and the others removed: every concurrent caller makes the
        same choice."""
        matches = [n for n in self.client.networks.list(names=[name]) if n.name == name]
        if len(matches) <= 1:
            return matches[0] if matches else None
        kept, *others = sorted(matches, key=_created_order)
        for other in others:
            try:
                other.remove()
            except NotFound:
                pass  # removed by a concurrent caller
            except APIError as error:  # a container started on it: it stays, ambiguous
                log.warning('network "%s" %s stays beside %s: %s', name, other.id[:12], kept.id[:12],
                            _reason(error))
        return kept

    # --- containers -----------------------------------------------------------------------

    def run(self, spec: ContainerSpec) -> ContainerState:
        with _engine_errors():
            container = self._container(spec.name) or self._create(spec)
            if container.status == "created":
                self._join_extra_networks(container, spec)
                try:
                    container.start()
                except APIError as error:
                    if _network_gone(error):
                        # Created while its network was removed (a concurrent step's clean-up):
                        # as it is it never starts, whatever is retried; removed, the next attempt
                        # creates it on the networks as they are then.
                        container.remove(force=True)
                    raise _start_failure(f'Could not start container "{spec.name}"', error) from None
                container.reload()
            return _state(container)

    def _create(self, spec: ContainerSpec) -> Container:
        try:
            kwargs = create_kwargs(spec, self._image_config(spec), self._cpuset(spec))
            return self.client.containers.create(**kwargs)
        except ImageNotFound as error:
            raise NoSuchImage(f'Image "{spec.image}" is not available: {_reason(error)}') from None
        except APIError as error:
            if error.status_code == _HTTP_CONFLICT:  # created by a concurrent reconcile step
                existing = self._container(spec.name)
                if existing is not None:
                    return existing
            raise _start_failure(f'Could not create container "{spec.name}"', error) from None

    def _cpuset(self, spec: ContainerSpec) -> str | None:
        """The CPUs a container with a CPU quota is pinned to (runtime/cpusets.py): of this node's
        (the worker runs on the node whose engine it drives), those least used by the running
        containers of every stack on the engine."""
        if not spec.nano_cpus:
            return None
        node_cpus = sorted(os.sched_getaffinity(0))
        pinned = self.client.api.containers(filters={"label": keys.CPUSET, "status": list(_HOLDING_CPUS)})
        in_use = [(container.get("Labels") or {}).get(keys.CPUSET, "") for container in pinned]
        return cpusets.least_used(cpusets.count_for(spec.nano_cpus, len(node_cpus)), node_cpus, in_use)

    def _image_config(self, spec: ContainerSpec) -> dict:
        """The image's config (ENV, ENTRYPOINT), read only when the spec extends it."""
        if not (spec.python_paths or spec.launcher):
            return {}
        return self.client.images.get(spec.image).attrs["Config"] or {}

    def _join_extra_networks(self, container: Container, spec: ContainerSpec) -> None:
        """The engine's API (1.41) creates a container on one network: the others are joined
        before it starts, each once (a step repeated after a crash finds some already joined)."""
        joined = container.attrs["NetworkSettings"].get("Networks") or {}
        fixed = dict(spec.extra_addresses)
        for network in spec.extra_networks:
            if network in joined:
                continue
            try:
                self.client.api.connect_container_to_network(
                    container.id, network, ipv4_address=fixed.get(network))
            except APIError as error:
                raise _start_failure(
                    f'Could not attach container "{spec.name}" to network "{network}"', error
                ) from None

    def find(self, labels: dict[str, str]) -> list[ContainerState]:
        with _engine_errors():
            containers = self.client.containers.list(
                all=True, filters=_label_filter(labels), ignore_removed=True
            )
            return sorted((_state(c) for c in containers), key=lambda state: state.name)

    def stats(self, name: str) -> ContainerStats | None:
        with _engine_errors():
            container = self._container(name)
            if container is None or container.status != "running":
                return None
            try:
                reading = container.stats(stream=False, one_shot=True)  # ~10 ms: no second reading
            except (NotFound, APIError):
                return None  # it ended meanwhile
        return _stats(container, reading)

    def signal(self, name: str, signal: str) -> None:
        with _engine_errors():
            container = self._container(name)
            if container is None or container.status != "running":
                return
            try:
                container.kill(signal=signal)
            except NotFound:
                return
            except APIError as error:
                if error.status_code != _HTTP_CONFLICT:  # 409: it stopped meanwhile
                    raise RuntimeError_(f'Could not signal container "{name}": {_reason(error)}') from None

    def remove(self, name: str) -> None:
        with _engine_errors():
            try:
                self.client.api.remove_container(name, force=True)
            except NotFound:
                return
            except APIError as error:
                if error.status_code != _HTTP_CONFLICT:  # 409: removal already in progress
                    raise RuntimeError_(f'Could not remove container "{name}": {_reason(error)}') from None

    def logs(self, name: str, since: str | None = None, max_bytes: int | None = None) -> list[LogLine]:
        since = normalize_timestamp(since) if since else None
        with _engine_errors():
            container = self._container(name)
            if container is None:
                return []
            # The engine's `since` (seconds with a fraction, inclusive) trims what is certainly
            # old, to the microsecond below the cursor, so a look reads little more than what is
            # new even when a container wrote megabytes within one second; the exact, strict cut
            # is made on normalised strings as the lines are read.
            engine_since = _engine_since(since) if since else None
            read = {
                stream: _read_log(
                    stream,
                    container.logs(
                        stdout=stream == "stdout",
                        stderr=stream == "stderr",
                        timestamps=True,
                        since=engine_since,
                        stream=True,
                        follow=False,
                    ),
                    since,
                    max_bytes,
                )
                for stream in ("stdout", "stderr")
            }
        lines = sorted(
            (line for stream_lines, _ in read.values() for line in stream_lines),
            key=lambda line: line.timestamp,
        )  # stable: stdout first on equal timestamps
        # A stream cut short at its budget: the other's lines after its last one wait for the
        # next call, so that a cursor at the newest line returned skips nothing.
        cuts = [found[-1].timestamp for found, whole in read.values() if not whole and found]
        return [line for line in lines if line.timestamp <= min(cuts)] if cuts else lines

    def container_events(
        self, labels: dict[str, str], actions: Sequence[str], since: str | None = None
    ) -> Iterator[ContainerEvent]:
        # A client of its own: the stream holds its connection for as long as it is followed,
        # and nothing it does may wait on (or be timed out with) the shared client's calls.
        with _engine_errors():
            try:
                client = docker.from_env(timeout=_CONNECT_TIMEOUT_SECONDS)
            except DockerException as error:
                raise RuntimeUnavailable(f"The Docker engine cannot be reached: {error}") from None
            filters = {"type": "container", "event": list(actions), **_label_filter(labels)}
            try:
                stream = client.events(since=since, filters=filters, decode=True)  # blocks: no timeout
            except BaseException:
                client.close()
                raise
        return _container_events(client, stream)

    def _container(self, name: str) -> Container | None:
        try:
            return self.client.containers.get(name)
        except NotFound:
            return None


def create_kwargs(spec: ContainerSpec, image_config: dict | None = None, cpuset: str | None = None) -> dict:
    """The Docker SDK `containers.create` arguments for `spec` (pure, so it can be checked
    without an engine, e.g. the GPU device request on a machine without NVIDIA runtime).
    `image_config`: the image's (its ENV and ENTRYPOINT), which `python_paths` and `launcher` extend;
    `cpuset`: the CPUs it is pinned to (runtime/cpusets.py), which Python 3.13+ counts through
    PYTHON_CPU_COUNT unless the spec's environment sets its own."""
    image_config = image_config or {}
    environment = dict(spec.environment)
    if spec.python_paths:
        environment["PYTHONPATH"] = _python_path(spec, _image_environment(image_config))
    pinned = {keys.CPUSET: cpuset} if cpuset else {}
    if cpuset:
        environment.setdefault("PYTHON_CPU_COUNT", str(len(cpusets.parse(cpuset))))
    kwargs: dict = {
        "name": spec.name,
        "image": spec.image,
        "command": spec.command,
        "labels": {**spec.labels, **keys.own(), **pinned},
        "init": False,  # the algorithm is PID 1 and receives SIGTERM itself
        # Never privileged, never the host's network or PID namespace, no Docker socket: the
        # mounts are only those of the spec (the job's own directories).
        "privileged": False,
        "cap_drop": ["ALL"],
        "cap_add": list(CAPABILITIES_KEPT) + list(SSH_SERVER_CAPABILITIES if spec.ssh_server else ()),
        "security_opt": list(SECURITY_OPTIONS),
        "pids_limit": settings.SAGEPORT_CONTAINER_PIDS_LIMIT,  # a fork bomb stays in its container
        "mounts": [
            DockerMount(mount.container_path, mount.host_path, type="bind", read_only=mount.read_only)
            for mount in spec.mounts
        ],
    }
    if spec.launcher:
        entrypoint = spec.entrypoint if spec.entrypoint is not None else image_config.get("Entrypoint") or []
        kwargs["entrypoint"] = [*spec.launcher, *entrypoint]
    elif spec.entrypoint is not None:
        kwargs["entrypoint"] = spec.entrypoint
    if spec.hostname:
        kwargs["hostname"] = spec.hostname
    if spec.working_dir:
        kwargs["working_dir"] = spec.working_dir
    if spec.network == "none":
        kwargs["network_mode"] = "none"
    elif spec.network:
        kwargs["network"] = spec.network
        endpoint: dict = {"Aliases": list(spec.network_aliases)}
        if spec.ipv4_address:
            endpoint["IPAMConfig"] = {"IPv4Address": spec.ipv4_address}
        kwargs["networking_config"] = {spec.network: endpoint}
    if spec.nano_cpus:
        kwargs["nano_cpus"] = spec.nano_cpus
    if cpuset:
        kwargs["cpuset_cpus"] = cpuset
    if spec.memory_bytes:
        kwargs["mem_limit"] = spec.memory_bytes
        kwargs["memswap_limit"] = spec.memory_bytes  # no swap beyond the instance's memory
    if spec.gpu_device_ids:
        ids = list(spec.gpu_device_ids)
        kwargs["device_requests"] = [DeviceRequest(driver="nvidia", device_ids=ids, capabilities=[["gpu"]])]
        environment["NVIDIA_VISIBLE_DEVICES"] = ",".join(ids)
    if spec.published_port:
        # None: a random host port, on the one address given (never every interface).
        kwargs["ports"] = {f"{spec.published_port}/tcp": (spec.published_address, None)}
    kwargs["environment"] = environment
    return kwargs


def _image_environment(image_config: dict) -> dict[str, str]:
    return dict(entry.split("=", 1) for entry in image_config.get("Env") or [] if "=" in entry)


def _python_path(spec: ContainerSpec, image_environment: dict[str, str]) -> str:
    """The spec's PYTHONPATH, else the image's, followed by `spec.python_paths`: what the image
    or the user put first keeps precedence."""
    first = spec.environment.get("PYTHONPATH", image_environment.get("PYTHONPATH", ""))
    return ":".join([part for part in first.split(":") if part] + list(spec.python_paths))


def _gateway_of(network) -> str:
    """The host's address on a bridge network (the engine's IPAM records it)."""
    configs = (network.attrs.get("IPAM") or {}).get("Config") or []
    gateways = [config["Gateway"] for config in configs if config.get("Gateway")]
    if not gateways:
        raise RuntimeError_(f'Network "{network.name}" has no gateway address')
    return gateways[0]


def _overlay_driver() -> dict:
    """Attachable: plain containers (not only swarm services) join an overlay network. Encrypted
    when configured: the engines then carry its VXLAN traffic in IPsec ESP."""
    options = {"encrypted": ""} if settings.SAGEPORT_OVERLAY_ENCRYPTED else {}
    return {"driver": "overlay", "attachable": True, "options": options}


def _ipam(subnet: str | None, overlay: bool = False) -> IPAMConfig | None:
    if subnet is None:
        return None  # the engine picks one
    network = ipaddress.ip_network(subnet)
    gateway = str(next(network.hosts()))
    # A swarm gives each engine joining an overlay network an address of its own (its load
    # balancer's), picked from the pool while containers join: kept to the upper half, it never
    # takes the fixed address of an instance (those are at the start of the subnet).
    dynamic = str(list(network.subnets(prefixlen_diff=1))[1]) if overlay else None
    return IPAMConfig(pool_configs=[IPAMPool(subnet=subnet, gateway=gateway, iprange=dynamic)])


def _created_order(network) -> tuple[str, int, str]:
    """Oldest first, to the nanosecond (RFC 3339 with its fraction's trailing zeros dropped, so
    not comparable as text); the id breaks ties."""
    created = network.attrs.get("Created", "")
    fraction = created[20:] if created[19:20] == "." else ""
    digits = "".join(itertools.takewhile(str.isdigit, fraction))
    return created[:19], int(digits.ljust(9, "0")), network.id


def _subnet_of(network) -> str:
    configs = (network.attrs.get("IPAM") or {}).get("Config") or [{}]
    return configs[0].get("Subnet", "")


_runtime: DockerRuntime | None = None
_runtime_lock = threading.Lock()


def ping(timeout: float) -> None:
    """Raises unless the engine answers within about `timeout` seconds (readiness: /readyz)."""
    client = docker.from_env(timeout=max(1, round(timeout)))
    try:
        client.ping()
    finally:
        client.close()


def get_runtime() -> DockerRuntime:
    """The process-wide runtime (one engine client shared by all tasks of a worker)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = DockerRuntime()
        return _runtime


@contextmanager
def _engine_errors() -> Iterator[None]:
    try:
        yield
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as error:
        raise RuntimeUnavailable(f"The Docker engine cannot be reached: {error}") from None
    except APIError as error:
        raise RuntimeError_(f"The Docker engine refused the request: {_reason(error)}") from None


def _container_events(client: docker.DockerClient, stream) -> Iterator[ContainerEvent]:
    """The events of `stream` until the engine ends it (the SDK's stream stops on a broken
    connection); the client goes with it."""
    try:
        with _engine_errors():
            for event in stream:
                attributes = event.get("Actor", {}).get("Attributes", {})
                nanoseconds = int(event.get("timeNano", 0))
                yield ContainerEvent(
                    action=event.get("Action", "").split(":")[0],  # "health_status: healthy"
                    name=attributes.get("name", ""),
                    labels=attributes,
                    time=f"{nanoseconds // 10**9}.{nanoseconds % 10**9:09d}",
                )
    finally:
        stream.close()
        client.close()


def _reason(error: APIError) -> str:
    return str(error.explanation or error)


def _start_failure(what: str, error: APIError) -> ContainerStartFailed:
    """The engine's 4xx refuses the spec (moby answers 400 for an entrypoint that is not there or
    cannot run, 404 for a network that went); its 5xx is a fault of its own (a swarm attach that
    timed out, a device driver it lacks): EngineFault."""
    failure = EngineFault if error.is_server_error() else ContainerStartFailed
    return failure(f"{what}: {_reason(error)}")


def _network_gone(error: APIError) -> bool:
    """A start refused because a network the container was created on no longer exists (the
    engine's words: `network <name> not found`, or through the swarm, `code = NotFound`)."""
    reason = _reason(error).lower()
    return "network" in reason and "not found" in reason


def _label_filter(labels: dict[str, str]) -> dict[str, list[str]]:
    return {"label": [f"{key}={value}" for key, value in sorted(labels.items())]}


def _state(container: Container) -> ContainerState:
    state = container.attrs["State"]
    finished = state["Status"] in ("exited", "dead")
    return ContainerState(
        name=container.name,
        id=container.id,
        status=state["Status"],
        exit_code=state["ExitCode"] if finished else None,
        oom_killed=bool(state.get("OOMKilled")),
        labels=container.labels,
        started_at=_engine_time(state.get("StartedAt")),
        finished_at=_engine_time(state.get("FinishedAt")),
        host_port=_host_port(container),
        addresses=_addresses(container),
    )


def _stats(container: Container, reading: dict) -> ContainerStats | None:
    memory = reading.get("memory_stats") or {}
    cpu_ns = ((reading.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage")
    if not memory.get("limit") or cpu_ns is None:
        return None  # the engine read nothing: the container stopped as it was read
    details = memory.get("stats") or {}
    # What `docker stats` shows: the page cache the kernel can reclaim is not the container's use
    # (cgroup v1 names it total_inactive_file, v2 inactive_file).
    cache = details.get("total_inactive_file", details.get("inactive_file", 0))
    device_requests = container.attrs["HostConfig"].get("DeviceRequests") or ()
    given = [request.get("DeviceIDs") or () for request in device_requests]
    return ContainerStats(
        read_at_ns=_epoch_ns(reading["read"]),
        started_at_ns=_epoch_ns(container.attrs["State"]["StartedAt"]),
        cpu_ns=int(cpu_ns),
        memory_used_bytes=max(int(memory.get("usage", 0)) - int(cache), 0),
        memory_limit_bytes=int(memory["limit"]),
        gpu_device_ids=tuple(device for devices in given for device in devices),
    )


def _epoch_ns(value: str) -> int:
    instant, fraction = _parse_timestamp(value)
    return int(instant.timestamp()) * 1_000_000_000 + int(fraction)


def _engine_time(value: str | None) -> str | None:
    return None if not value or value == _NEVER else value


def _addresses(container: Container) -> dict[str, str]:
    networks = container.attrs["NetworkSettings"].get("Networks") or {}
    return {name: joined["IPAddress"] for name, joined in networks.items() if joined.get("IPAddress")}


def _host_port(container: Container) -> int | None:
    for bindings in (container.attrs["NetworkSettings"].get("Ports") or {}).values():
        for binding in bindings or ():
            if binding.get("HostPort"):
                return int(binding["HostPort"])
    return None


# --- log timestamps -------------------------------------------------------------------------
# The engine writes RFC 3339 with nanoseconds but drops trailing zeros ("…:05.1Z"), so two stamps
# compare correctly as strings only once the fraction is padded to nine digits and the zone is Z.

_TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")


def _parse_timestamp(value: str) -> tuple[datetime, str]:
    """(the instant to the second, the nine-digit fraction) of an RFC 3339 timestamp."""
    match = _TIMESTAMP.fullmatch(value)
    if match is None:
        raise ValueError(f"Not an RFC 3339 timestamp: {value!r}")
    seconds, fraction, zone = match.groups()
    instant = datetime.fromisoformat(seconds + ("+00:00" if zone == "Z" else zone))
    return instant, (fraction or "").ljust(9, "0")


def normalize_timestamp(value: str) -> str:
    """`value` as UTC `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, which orders correctly as a string."""
    instant, fraction = _parse_timestamp(value)
    return f"{instant.astimezone(UTC):%Y-%m-%dT%H:%M:%S}.{fraction}Z"


def _engine_since(since: str) -> float:
    """The engine's `since` for lines after `since`: a microsecond earlier, as the float the
    Docker SDK passes through (the engine scales the fraction by its digits)."""
    instant, fraction = _parse_timestamp(since)
    return int(instant.timestamp()) + (int(fraction[:6]) - 1) / 1_000_000


def _read_log(
    stream: str, chunks: Iterator[bytes], since: str | None, max_bytes: int | None
) -> tuple[list[LogLine], bool]:
    """The lines of one stream after `since` as the engine streams them, until their messages
    hold `max_bytes` (None: all); (lines, whether the stream was read to its end). A container
    that floods its output costs one call `max_bytes`, however much it wrote."""
    lines, size, pending = [], 0, b""
    try:
        for chunk in chunks:
            *entries, pending = (pending + chunk).split(b"\n")
            for entry in entries:
                line = _parse_entry(stream, entry)
                if line is None or (since is not None and line.timestamp <= since):
                    continue
                lines.append(line)
                size += len(line.message)
                if max_bytes is not None and size >= max_bytes:
                    return lines, False
        line = _parse_entry(stream, pending)  # the text after the final newline, if any
        return lines + ([line] if line and (since is None or line.timestamp > since) else []), True
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()  # stop the engine's stream of what is left unread


def _parse_entry(stream: str, entry: bytes) -> LogLine | None:
    if not entry:
        return None
    stamp, _, message = entry.decode("utf-8", errors="replace").partition(" ")
    return LogLine(timestamp=normalize_timestamp(stamp), stream=stream, message=message)
