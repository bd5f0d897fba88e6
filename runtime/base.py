"""The container runtime seam: what the reconcilers need from a container engine.

`runtime/docker.py` is the only implementation that talks to a real engine and the only
module that imports `docker`; it translates engine errors into the errors below. Every operation
is idempotent and addresses containers by deterministic name or by label, so a reconcile step
that is repeated after a crash does no harm."""
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from runtime.pull_progress import PullReport


class RuntimeError_(Exception):
    """Base of runtime errors (the trailing underscore avoids shadowing the builtin)."""


class RuntimeUnavailable(RuntimeError_):
    """The engine cannot be reached: transient, retry later."""


class NoSuchImage(RuntimeError_):
    """The image is not in the local engine and could not be pulled: permanent for the job."""


class ContainerStartFailed(RuntimeError_):
    """The engine refused to create or start the container (bad spec, missing device...)."""


class EngineFault(ContainerStartFailed):
    """The engine failed to create, attach or start the container through a fault of its own (its
    HTTP 5xx: a swarm network attach that timed out, an address it could not allocate, a device
    driver it lacks), not a refusal of the spec (a 4xx: an entrypoint that is not there). The
    platform's fault, not the job's: an InternalServerError, which RetryStrategy retries."""


class MultiHostNetworkUnavailable(ContainerStartFailed):
    """A network across engines was asked of an engine that cannot make one (not in a swarm)."""


@dataclass(frozen=True)
class Mount:
    host_path: str
    container_path: str
    read_only: bool = False


@dataclass(frozen=True)
class ContainerSpec:
    name: str
    image: str
    labels: dict[str, str]
    command: list[str] | None = None  # replaces the image CMD (e.g. ["train"])
    entrypoint: list[str] | None = None  # None keeps the image ENTRYPOINT
    environment: dict[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    network: str | None = None  # a network name, "none" for isolation, None for the default
    hostname: str | None = None
    working_dir: str | None = None  # None keeps the image's WORKDIR
    network_aliases: tuple[str, ...] = ()
    ipv4_address: str | None = None  # a fixed address on `network` (one created with subnets)
    extra_networks: tuple[str, ...] = ()  # further networks joined before the container starts
    # A fixed address on some of them: (network, IPv4 address) pairs (networks created with subnets).
    extra_addresses: tuple[tuple[str, str], ...] = ()
    nano_cpus: int | None = None
    memory_bytes: int | None = None
    gpu_device_ids: tuple[str, ...] = ()  # NVIDIA device ids; empty means no GPU at all
    published_port: int | None = None  # container port published on `published_address` (random host port)
    published_address: str = "127.0.0.1"  # the host address it is published on (the node's)
    # Appended to the image's own PYTHONPATH (and to one in `environment`), never replacing it.
    python_paths: tuple[str, ...] = ()
    ssh_server: bool = False  # the container runs sshd (MPI jobs): it gets the two capabilities sshd needs
    # A command the container's process runs under (e.g. torchrun): it prefixes the entrypoint,
    # the spec's or else the image's, and the command follows as usual.
    launcher: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContainerState:
    name: str
    id: str
    status: str  # created | running | exited | dead | ... (the engine's word)
    exit_code: int | None
    oom_killed: bool
    labels: dict[str, str]
    started_at: str | None = None  # RFC 3339 as reported by the engine
    finished_at: str | None = None
    host_port: int | None = None  # where `published_port` landed on the published address
    # Its IPv4 address on each network it joined, by network name (a running container's).
    addresses: dict[str, str] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return self.status in ("running", "restarting", "paused")

    @property
    def exited(self) -> bool:
        return self.status in ("exited", "dead")

    @property
    def never_started(self) -> bool:
        """Created but not started: its creator died between the two (a worker killed mid-step).
        Starting it again (`ContainerRuntime.run`) is what finishes that step."""
        return self.status == "created"


@dataclass(frozen=True)
class ContainerStats:
    """One reading of a running container's use of its instance (the engine's one-shot stats)."""

    read_at_ns: int  # when the engine read it, ns since the epoch
    started_at_ns: int  # when the container started, ns since the epoch
    cpu_ns: int  # CPU time used since it started, all cores added up
    memory_used_bytes: int  # its memory less the page cache it could give back (as `docker stats`)
    memory_limit_bytes: int  # its memory limit (the host's memory when it has none)
    gpu_device_ids: tuple[str, ...] = ()  # the NVIDIA devices it was given


@dataclass(frozen=True)
class LogLine:
    timestamp: str  # RFC 3339 with nanoseconds, as the engine stamps it
    stream: str  # "stdout" | "stderr"
    message: str


@dataclass(frozen=True)
class SwarmMembership:
    """The engine's own place in its Docker swarm (`docker info`'s Swarm section)."""

    node_id: str  # the swarm's id of this engine's node
    manager: bool  # whether it can change the swarm (create overlay networks, remove nodes)
    address: str = ""  # the address it advertises to the swarm (`docker info`'s Swarm.NodeAddr)


@dataclass(frozen=True)
class SwarmJoinInfo:
    """What an engine outside the swarm needs to join it, as a manager tells it (`docker swarm
    join-token`, and `docker info`'s Swarm.RemoteManagers)."""

    manager_token: str
    worker_token: str
    managers: dict[str, str]  # the managers' swarm node ids -> their addresses ("10.0.0.21:2377")


@dataclass(frozen=True)
class ContainerEvent:
    """Something that happened to a container, as the engine tells it."""

    action: str  # die | start | health_status | oom | ... (the engine's word, details cut off)
    name: str
    labels: dict[str, str]  # its labels (and the engine's own attributes: image, exitCode, ...)
    time: str  # when it happened, as the engine's `since` takes it ("seconds.nanoseconds")


class ContainerRuntime(Protocol):
    def has_image(self, image: str) -> bool: ...

    def image_id(self, image: str) -> str | None:
        """The local image's content id (`sha256:…`), or None when the engine does not have it."""

    def pull_image(self, image: str, report: PullReport | None = None) -> None:
        """Pull `image`, telling `report` how far it has come ("2/5 layers, 41.3 of 120.8 MB") at
        most once per SAGEPORT_PULL_PROGRESS_SECONDS; raises NoSuchImage with the engine's reason
        on failure."""

    def ensure_network(
        self, name: str, labels: dict[str, str], internal: bool = False, subnets: Sequence[str] = (),
        overlay: bool = False,
    ) -> str:
        """Get-or-create a bridge network; `internal` ones reach nothing outside themselves. With
        `subnets`, the first one no other network of the engine overlaps is given to it (its
        gateway the first address), so containers can have fixed addresses on it. Returns the
        network's subnet (an existing network's own). `overlay`: a Swarm attachable overlay
        network instead, which containers of every engine in the swarm join (its upper half is
        left to the swarm's own addresses: fixed ones must lie in the lower half); an engine not
        in swarm mode raises `MultiHostNetworkUnavailable`."""

    def ensure_services_network(self, name: str, subnet: str, gateway: str) -> None:
        """Get-or-create the engine-wide internal bridge on `subnet` whose host side is `gateway`,
        on which containers reach the host's `gateway` address and not each other. It belongs to
        the engine, not to one stack: it carries no stack label, so no stack's clean-up removes it."""

    def ensure_gateway_network(self, name: str, labels: dict[str, str]) -> str:
        """Get-or-create an internal bridge on a subnet the engine picks, on which containers reach
        the host's side of the bridge (the gateway address, returned) and not each other: where a
        host process listens for the containers of one node (e.g. the checkpoint tier service).
        `labels` are its own (the runtime adds nothing)."""

    def remove_network(self, name: str) -> None:
        """Remove the network if it exists (missing is fine)."""

    def swarm_membership(self) -> SwarmMembership | None:
        """This engine's node in its swarm; None when it is in no swarm (LocalNodeState other than
        "active")."""

    def swarm_state(self) -> str:
        """Where this engine stands with a swarm: `docker info`'s Swarm.LocalNodeState
        ("inactive", "pending", "active", "error" or "locked")."""

    def swarm_join_info(self) -> SwarmJoinInfo:
        """From a manager engine: the join tokens and the managers' addresses; raises
        RuntimeError_ elsewhere."""

    def join_swarm(self, manager_address: str, token: str, advertise_address: str = "") -> None:
        """Join the swarm the manager at `manager_address` belongs to (`docker swarm join`), as the
        role `token` grants, advertising `advertise_address` (Docker's choice when ""). A refusal,
        or a manager not reached in time, raises RuntimeError_."""

    def leave_swarm(self) -> None:
        """Leave the swarm with force (`docker swarm leave --force`): what a removed engine still
        holds of it is dropped. Not in one is fine."""

    def remove_swarm_node(self, node_id: str) -> None:
        """From a manager engine: demote the swarm node `node_id` if it is a manager, then remove
        it from the swarm with force (`docker node demote`, `docker node rm --force`), as for a
        host that is gone. A node the swarm no longer has is fine; a refusal raises RuntimeError_."""

    def run(self, spec: ContainerSpec) -> ContainerState:
        """Create and start the container named `spec.name`, or return the existing one."""

    def find(self, labels: dict[str, str]) -> list[ContainerState]:
        """All containers (running or not) carrying every one of `labels`."""

    def find_networks(self, labels: dict[str, str]) -> list[str]: ...

    def stats(self, name: str) -> ContainerStats | None:
        """One reading of the container's CPU and memory use; None when it is not running."""

    def signal(self, name: str, signal: str) -> None:
        """Send `signal` (e.g. "SIGTERM") to a running container; no-op if it is not running."""

    def remove(self, name: str) -> None:
        """Force-remove the container if it exists (missing is fine)."""

    def logs(self, name: str, since: str | None = None, max_bytes: int | None = None) -> list[LogLine]:
        """Log lines after the RFC 3339 timestamp `since` (all when None), oldest first; with
        `max_bytes`, the oldest of them until their messages hold that many bytes (a caller that
        asks again from the last line's timestamp gets the rest)."""

    def container_events(
        self, labels: dict[str, str], actions: Sequence[str], since: str | None = None
    ) -> Iterator[ContainerEvent]:
        """Follow the engine's events about containers carrying every one of `labels`, limited to
        `actions`, from `since` (an earlier event's `time`: the engine replays what followed it)
        or from now. Connects before it returns (RuntimeUnavailable when it cannot); the iterator
        blocks until the next event and ends when the engine goes away."""
