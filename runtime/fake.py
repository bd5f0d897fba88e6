"""An in-memory container engine implementing the runtime seam (`runtime/base.py`), so
that the reconcilers can be driven step by step in tests, in milliseconds, without Docker.

It keeps what an engine keeps (images, networks, containers with their state, exit code, labels
and output) and behaves as `DockerRuntime` does where the reconcilers rely on it: `run` is
get-or-create by name, every created object carries the stack's own labels, a missing container
or network is harmless to remove or signal, and `logs(since=…)` returns only later lines. What
happens inside a container is the test's to decide: make it print, exit with a code, be killed
for its memory, ignore SIGTERM, vanish, or make the whole engine unreachable.

Serving containers' `/ping` is HTTP, outside the seam: `health` says what a ping would find, for
a test's stand-in of the health checker."""
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

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
from runtime.pull_progress import PullReport

SIGTERM_EXIT_CODE = 143  # 128 + 15, what a process that honours SIGTERM usually ends with
SIGKILL_EXIT_CODE = 137  # 128 + 9
_FIRST_HOST_PORT = 32768
FAKE_MANAGER_TOKEN = "SWMTKN-1-fake-manager"  # the join tokens a fake manager hands out
FAKE_WORKER_TOKEN = "SWMTKN-1-fake-worker"
_REFUSED = "The Docker engine refused the request: "


@dataclass
class FakeContainer:
    spec: ContainerSpec
    state: ContainerState
    output: list[LogLine] = field(default_factory=list)
    signals: list[str] = field(default_factory=list)  # every signal sent, in order
    ignores_sigterm: bool = False
    healthy: bool = False  # what /ping answers while it runs
    health_problem: str = "/ping was refused: nothing listens on port 8080 yet"
    stats: ContainerStats | None = None  # what `stats` reads while it runs (`use` sets it)


class FakeRuntime:
    def __init__(self, images: tuple[str, ...] = ()):
        self.images: dict[str, str] = {}
        self.pullable: set[str] = set()  # images a pull would fetch
        self.pull_reports: list[str] = []  # what a pull tells its progress report, in order
        self.networks: dict[str, dict] = {}  # name -> {"labels": ..., "internal": ...}
        self.containers: dict[str, FakeContainer] = {}
        self.events: list[ContainerEvent] = []  # what the engine told, oldest first
        self.refused: dict[str, str] = {}  # container name -> why the engine refuses to create it
        self.faulting: dict[str, str] = {}  # container name -> the engine's own fault at its next run
        self.unreachable = False
        self.swarm = False  # whether the engine is in swarm mode (overlay networks)
        self.swarm_node_id = "local-swarm-node"  # this engine's node in the swarm, when in one
        self.swarm_manager = True
        self.swarm_nodes: dict[str, str] = {}  # the swarm's other nodes: id -> role (manager | worker)
        self.swarm_refusal = ""  # why the swarm refuses to remove a node, when it does
        self.swarm_stuck_state = ""  # LocalNodeState other than active/inactive ("error", "pending")
        self.swarm_address = "10.0.0.9"  # the address this engine advertises to the swarm
        self.swarm_managers: dict[str, str] = {}  # what a manager tells of the managers: id -> address
        self.unreached_managers: set[str] = set()  # manager addresses a join times out on
        self.swarm_joins: list[tuple[str, str, str]] = []  # (manager address, token, advertised)
        self.swarm_leaves = 0
        self._swarm_ids = itertools.count(1)
        self.ignore_sigterm_by_default = False
        self.healthy_by_default = False
        self._ids = itertools.count(1)
        self._ports = itertools.count(_FIRST_HOST_PORT)
        self._hosts = itertools.count(2)  # addresses 10.0.x.y handed out on every network
        self._clock = datetime.now(UTC)
        for image in images:
            self.add_image(image)

    # --- what the test controls -----------------------------------------------------------

    def add_image(self, image: str) -> None:
        self.images[image] = f"sha256:{next(self._ids):064x}"

    def print(self, name: str, message: str, stream: str = "stdout") -> None:
        self.containers[name].output.append(LogLine(self._stamp(), stream, message))

    def exit(self, name: str, code: int, oom_killed: bool = False) -> None:
        """The container's process ends by itself with `code`."""
        container = self.containers[name]
        container.state = replace(
            container.state, status="exited", exit_code=code, oom_killed=oom_killed, finished_at=self._stamp()
        )
        if oom_killed:
            self._tell("oom", container.state)
        self._tell("die", container.state)

    def leave_created(self, name: str) -> None:
        """The container is created but not started, as when the worker that created it was
        killed before it started it (Docker's "created" status)."""
        container = self.containers[name]
        container.state = replace(container.state, status="created", started_at=None)

    def vanish(self, name: str) -> None:
        """The container disappears from the engine (removed behind the platform's back)."""
        del self.containers[name]

    def use(self, name: str, stats: ContainerStats) -> None:
        """What the engine reads of the container's CPU and memory use from now on."""
        self.containers[name].stats = stats

    def set_health(self, name: str, healthy: bool, problem: str = "/ping answered HTTP 500") -> None:
        container = self.containers[name]
        container.healthy, container.health_problem = healthy, problem

    # --- the runtime seam -----------------------------------------------------------------

    def has_image(self, image: str) -> bool:
        self._answer()
        return image in self.images

    def image_id(self, image: str) -> str | None:
        self._answer()
        return self.images.get(image)

    def pull_image(self, image: str, report: PullReport | None = None) -> None:
        self._answer()
        if image not in self.pullable:
            raise NoSuchImage(f'Unable to pull image "{image}": repository does not exist')
        for summary in self.pull_reports:
            if report is not None:
                report(summary)
        self.add_image(image)

    def ensure_network(
        self, name: str, labels: dict[str, str], internal: bool = False, subnets: Sequence[str] = (),
        overlay: bool = False,
    ) -> str:
        self._answer()
        if overlay and not self.swarm:
            raise MultiHostNetworkUnavailable(f'Could not create network "{name}": not in swarm mode')
        if name not in self.networks:
            taken = {network.get("subnet") for network in self.networks.values()}  # gateway ones: none
            free = [subnet for subnet in subnets if subnet not in taken]
            if subnets and not free:
                raise RuntimeError_(f'Could not create network "{name}": every subnet offered is taken')
            subnet = free[0] if free else f"172.{18 + len(self.networks) % 200}.0.0/16"
            self.networks[name] = {
                "labels": {**labels, **keys.own()}, "internal": internal, "subnet": subnet,
                "overlay": overlay,
            }
        return self.networks[name]["subnet"]

    def ensure_services_network(self, name: str, subnet: str, gateway: str) -> None:
        self._answer()
        self.networks.setdefault(name, {
            "labels": {keys.MANAGED: "true", keys.ROLE: keys.SERVICES_ROLE},
            "internal": True,
            "subnet": subnet,
            "gateway": gateway,
        })

    def ensure_gateway_network(self, name: str, labels: dict[str, str]) -> str:
        self._answer()
        taken = len(self.networks)
        network = self.networks.setdefault(name, {
            "labels": dict(labels), "internal": True, "gateway": f"172.30.{taken}.1",
        })
        return network["gateway"]

    def remove_network(self, name: str) -> None:
        self._answer()
        self.networks.pop(name, None)

    def swarm_membership(self) -> SwarmMembership | None:
        self._answer()
        if self.swarm_state() != "active":
            return None
        return SwarmMembership(self.swarm_node_id, self.swarm_manager, self.swarm_address)

    def swarm_state(self) -> str:
        self._answer()
        return self.swarm_stuck_state or ("active" if self.swarm else "inactive")

    def swarm_join_info(self) -> SwarmJoinInfo:
        self._answer()
        if not (self.swarm and self.swarm_manager):
            raise RuntimeError_(f"{_REFUSED}This node is not a swarm manager.")
        managers = {**self.swarm_managers, self.swarm_node_id: f"{self.swarm_address}:2377"}
        return SwarmJoinInfo(FAKE_MANAGER_TOKEN, FAKE_WORKER_TOKEN, managers)

    def join_swarm(self, manager_address: str, token: str, advertise_address: str = "") -> None:
        self._answer()
        self.swarm_joins.append((manager_address, token, advertise_address))
        if self.swarm_state() != "inactive":
            raise RuntimeError_(f"{_REFUSED}This node is already part of a swarm.")
        if manager_address in self.unreached_managers:
            self.swarm_stuck_state = "pending"  # as Docker's join goes on in the background
            raise RuntimeError_(f"{_REFUSED}Timeout was reached before node joined.")
        self.swarm, self.swarm_manager = True, token == FAKE_MANAGER_TOKEN
        self.swarm_node_id = f"joined-{next(self._swarm_ids)}"
        self.swarm_address = advertise_address or self.swarm_address

    def leave_swarm(self) -> None:
        self._answer()
        self.swarm_leaves += 1
        self.swarm, self.swarm_stuck_state = False, ""

    def remove_swarm_node(self, node_id: str) -> None:
        self._answer()
        manager = self.swarm and self.swarm_manager
        refusal = self.swarm_refusal or ("" if manager else "This node is not a swarm manager.")
        if refusal:
            raise RuntimeError_(f"{_REFUSED}{refusal}")
        self.swarm_nodes.pop(node_id, None)  # demoted (when a manager), then removed

    def run(self, spec: ContainerSpec) -> ContainerState:
        self._answer()
        existing = self.containers.get(spec.name)
        if existing is not None:
            if existing.state.never_started:  # as Docker's run: start what an earlier run created
                existing.state = replace(existing.state, status="running", started_at=self._stamp())
                self._tell("start", existing.state)
            return existing.state
        if spec.image not in self.images:
            raise NoSuchImage(f"No such image: {spec.image}")
        if spec.name in self.refused:
            raise ContainerStartFailed(f'Could not create container "{spec.name}": {self.refused[spec.name]}')
        if spec.name in self.faulting:
            raise EngineFault(f'Could not start container "{spec.name}": {self.faulting.pop(spec.name)}')
        absent = [network for network in spec.extra_networks if network not in self.networks]
        if absent:
            raise ContainerStartFailed(f'Could not attach container "{spec.name}": no network {absent[0]}')
        state = ContainerState(
            name=spec.name,
            id=f"{next(self._ids):064x}",
            status="running",
            exit_code=None,
            oom_killed=False,
            labels={**spec.labels, **keys.own()},
            started_at=self._stamp(),
            host_port=next(self._ports) if spec.published_port else None,
            addresses=self._addresses(spec),
        )
        self.containers[spec.name] = FakeContainer(
            spec, state, ignores_sigterm=self.ignore_sigterm_by_default, healthy=self.healthy_by_default
        )
        self._tell("start", state)
        return state

    def find(self, labels: dict[str, str]) -> list[ContainerState]:
        self._answer()
        return [c.state for c in self.containers.values() if labels.items() <= c.state.labels.items()]

    def find_networks(self, labels: dict[str, str]) -> list[str]:
        self._answer()
        return [name for name, net in self.networks.items() if labels.items() <= net["labels"].items()]

    def stats(self, name: str) -> ContainerStats | None:
        self._answer()
        container = self.containers.get(name)
        return container.stats if container is not None and container.state.running else None

    def signal(self, name: str, signal: str) -> None:
        self._answer()
        container = self.containers.get(name)
        if container is None or not container.state.running:
            return
        container.signals.append(signal)
        if signal == "SIGKILL":
            self.exit(name, SIGKILL_EXIT_CODE)
        elif signal == "SIGTERM" and not container.ignores_sigterm:
            self.exit(name, SIGTERM_EXIT_CODE)

    def remove(self, name: str) -> None:
        self._answer()
        self.containers.pop(name, None)

    def logs(self, name: str, since: str | None = None, max_bytes: int | None = None) -> list[LogLine]:
        self._answer()
        container = self.containers.get(name)
        if container is None:
            return []
        lines, size = [], 0
        for line in container.output:
            if since is None or line.timestamp > since:
                lines.append(line)
                size += len(line.message)
                if max_bytes is not None and size >= max_bytes:
                    break
        return lines

    def container_events(
        self, labels: dict[str, str], actions: Sequence[str], since: str | None = None
    ) -> Iterator[ContainerEvent]:
        """The matching events told so far, after `since`; then the stream ends, as it does when
        the engine goes away."""
        self._answer()
        told = [
            event for event in self.events
            if event.action in actions and labels.items() <= event.labels.items()
            and (since is None or float(event.time) > float(since))
        ]
        return iter(told)

    # --- health checks ----------------------------------------------------------------------

    def health(self, name: str) -> tuple[bool, str]:
        """(healthy, problem): what `GET /ping` on the container would find now."""
        container = self.containers.get(name)
        if container is None or not container.state.running:
            return False, "/ping was refused: nothing listens on port 8080"
        return container.healthy, "" if container.healthy else container.health_problem

    # --- internals ------------------------------------------------------------------------

    def _answer(self) -> None:
        if self.unreachable:
            raise RuntimeUnavailable("The Docker engine cannot be reached: connection refused")

    def _tell(self, action: str, state: ContainerState) -> None:
        moment = datetime.fromisoformat(self._stamp().replace("Z", "+00:00")).timestamp()
        self.events.append(ContainerEvent(action, state.name, dict(state.labels), f"{moment:.9f}"))

    def _addresses(self, spec: ContainerSpec) -> dict[str, str]:
        networks = [] if spec.network in (None, "none") else [spec.network]
        host = next(self._hosts)
        given = {spec.network: spec.ipv4_address} if spec.ipv4_address else {}  # fixed ones, as Docker
        pooled = {name: f"10.0.{host // 250}.{host % 250 + 2}" for name in [*networks, *spec.extra_networks]}
        return pooled | given | dict(spec.extra_addresses)

    def _stamp(self) -> str:
        """An RFC 3339 time with nanoseconds, later than every earlier one (the engine's format)."""
        self._clock = max(self._clock + timedelta(microseconds=1), datetime.now(UTC))
        return f"{self._clock:%Y-%m-%dT%H:%M:%S}.{self._clock.microsecond:06d}000Z"
