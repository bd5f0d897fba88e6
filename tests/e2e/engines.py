"""More Docker engines on this machine, as on several hosts: each dockerd in a network namespace
of its own, the namespaces joined by veth pairs on one bridge (the "wire"), as hosts on one
private network. No traffic leaves the machine and the machine's own engine is not touched.

- The wire's bridge lives in a namespace of its own: the host's netfilter (Docker's FORWARD
  policy with bridge-nf-call-iptables) never sees the traffic between the engines. The host
  joins the wire too (`HOST_SUFFIX`), so that its processes reach what an engine publishes on its
  address (a serving container's port), as the API host reaches a node.
- Engines are reached through their unix sockets. Their data roots are kept between sessions in
  numbered slots under `ENGINE_CACHE_DIR` (one session holds a slot by `flock`): an engine's image
  store starts with what an earlier session loaded into it, so a large image is loaded once per
  slot, not once per session. Each session removes its containers from the engines it used, and
  their swarm and network state once they stopped (and again before starting them: a session
  that died leaves them)."""
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest
import requests

from tests.e2e.hosting import wait_until

ENGINE_START_SECONDS = 60
ENGINE_CACHE_DIR = Path("/var/tmp/sageport-test-engines")
HOST_SUFFIX = 254  # the host's own address on the wire: <subnet>.254
SWARM_PORT = 2377
ENGINE_LINK = "eth0"  # an engine's link to the wire, in its namespace


def run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


def require_namespaces() -> None:
    """Skip the test where this machine cannot make network namespaces and more engines."""
    if os.geteuid() != 0 or not all(shutil.which(tool) for tool in ("dockerd", "nsenter", "ip")):
        pytest.skip("more Docker engines in network namespaces need root, dockerd, nsenter and ip")


class Engine:
    """A dockerd in the network namespace `namespace` (`nsenter --net`: `ip netns exec` would hide
    the cgroup mounts from it), with its own data root, exec root and socket. Started at once;
    `wait_ready` waits (bounded) until it answers, so that several start together."""

    def __init__(
        self, namespace: str, address: str, root: Path, data_root: Path, log_dir: Path | None = None,
    ):
        self.namespace, self.address, self.root, self.data_root = namespace, address, root, data_root
        self.socket = f"unix://{root}/d.sock"
        # Where the caller keeps logs past the engine's own root (removed as it stops).
        self.log_path = (log_dir or root) / f"dockerd-{namespace}.log"
        self._launch()

    def _launch(self) -> None:
        forget_state(self.data_root)  # what a session that died left, or this engine's last run
        self.log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            ["nsenter", f"--net={self.netns_path}", "dockerd", "--data-root", str(self.data_root),
             "--exec-root", str(self.root / "exec"), "-H", self.socket,
             "--pidfile", str(self.root / "d.pid")],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        # The API version given: the client would otherwise ask the engine at once, not yet listening.
        self.client = docker.DockerClient(base_url=self.socket, version="1.41", timeout=30)

    def restart(self) -> None:
        """The engine as a fresh one of its slot: its containers removed, stopped, its swarm and
        networks forgotten, started again and answering (its images stay)."""
        _clear_and_stop(self)
        _forget_links_and_rules(self.namespace)
        self._launch()
        self.wait_ready()

    def wait_ready(self) -> None:
        wait_until(self._answers, timeout=ENGINE_START_SECONDS, what=f"dockerd in {self.namespace}")

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.namespace}"

    def _answers(self) -> bool:
        assert self.process.poll() is None, self.log_path.read_text()[-2000:]
        try:
            return self.client.ping()
        except Exception:  # not listening yet
            return False

    def docker(self, *argv: str, stdin: bytes | None = None) -> str:
        environment = {**os.environ, "DOCKER_HOST": self.socket}
        done = subprocess.run(["docker", *argv], input=stdin, check=True, capture_output=True, timeout=300,
                              env=environment)
        return done.stdout.decode().strip()

    def ensure_image(self, tag: str) -> None:
        """Load the host engine's image `tag` unless this engine holds the same image already
        (its cached slot): `docker save` of a large image costs as much as the load."""
        wanted = docker.from_env().images.get(tag).id
        try:
            if self.client.images.get(tag).id == wanted:
                return
        except docker.errors.ImageNotFound:
            pass
        with subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE) as saving:
            environment = {**os.environ, "DOCKER_HOST": self.socket}
            subprocess.run(["docker", "load", "-q"], stdin=saving.stdout, check=True, capture_output=True,
                           timeout=600, env=environment)
        assert saving.returncode == 0, f"docker save {tag} failed"

    def clear(self) -> None:
        """Remove the containers a session left in the engine; the images stay for the next
        session of this slot, the swarm's and networks' state goes when it stops (`forget_state`)."""
        for container in self.client.containers.list(all=True, ignore_removed=True):
            container.remove(force=True)

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self.log.close()
        forget_state(self.data_root)


def _forget_links_and_rules(namespace: str) -> None:
    """What a stopped engine left in its namespace, gone as in a new one: its bridges (which keep
    their addresses: the services network's 169.254.170.2 on the old bridge and the new one would
    route the containers' replies to the old) and its iptables rules; its link to the wire stays."""
    listed = subprocess.run(["ip", "-n", namespace, "-o", "link", "show"], check=True, capture_output=True,
                            text=True, timeout=60).stdout
    for line in listed.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name not in ("lo", ENGINE_LINK):
            subprocess.run(["ip", "-n", namespace, "link", "del", name], capture_output=True, timeout=60)
    for table in ("filter", "nat", "mangle", "raw"):
        for flag in ("-F", "-X"):
            run("ip", "netns", "exec", namespace, "iptables", "-t", table, flag)


def forget_state(data_root: Path) -> None:
    """Forget a stopped engine's swarm and networks (the way to reset a node's swarm state: the
    next session makes a swarm of its own, and `docker swarm leave` on a swarm that lost a
    manager can wait for a quorum for long)."""
    for state in ("swarm", "network"):
        shutil.rmtree(data_root / state, ignore_errors=True)


@dataclass(frozen=True)
class Wire:
    """The private network: its /24 and the namespaces on it."""

    subnet: str  # "10.216.17": addresses are <subnet>.<n>
    namespaces: list[str]

    def address(self, index: int) -> str:
        return f"{self.subnet}.{index + 1}"

    @property
    def host_address(self) -> str:
        return f"{self.subnet}.{HOST_SUFFIX}"


@contextmanager
def wire(count: int) -> Iterator[Wire]:
    """`count` network namespaces and the host, each with one address on a bridge of their own
    (in its own namespace); everything is removed afterwards (a namespace's end of a veth pair
    goes with the namespace, and the peer with that)."""
    suffix = uuid.uuid4().hex[:6]
    hub = f"sgw{suffix}"
    namespaces = [f"sge{suffix}{index}" for index in range(count)]
    subnet = f"10.216.{int(suffix[:2], 16)}"
    host_link = f"sgh{suffix}"
    try:
        for namespace in (hub, *namespaces):
            run("ip", "netns", "add", namespace)
            run("ip", "-n", namespace, "link", "set", "lo", "up")
        run("ip", "-n", hub, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", hub, "link", "set", "br0", "up")
        for index, namespace in enumerate(namespaces):
            _plug(hub, f"p{index}", ENGINE_LINK, namespace, f"{subnet}.{index + 1}")
        _plug(hub, "host", host_link, None, f"{subnet}.{HOST_SUFFIX}")
        yield Wire(subnet, namespaces)
    finally:
        for namespace in (*namespaces, hub):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30)


def _plug(hub: str, port: str, link: str, namespace: str | None, address: str) -> None:
    """A veth pair from the hub's bridge (`port`) to `link` in `namespace` (None: the host)."""
    run("ip", "-n", hub, "link", "add", port, "type", "veth", "peer", "name", link)
    run("ip", "-n", hub, "link", "set", port, "master", "br0", "up")
    run("ip", "-n", hub, "link", "set", link, "netns", namespace or str(os.getpid()))  # ours: the host's
    inside = ["ip", "-n", namespace] if namespace else ["ip"]
    run(*inside, "addr", "add", f"{address}/24", "dev", link)
    run(*inside, "link", "set", link, "up")


@contextmanager
def engines_on(
    network: Wire, images: tuple[str, ...] = (), log_dir: Path | None = None,
) -> Iterator[list[Engine]]:
    """An engine in each of the wire's namespaces, each on a cached data root, holding `images`;
    cleared and stopped afterwards. Their dockerd logs go to `log_dir` when given (kept then)."""
    with ExitStack() as stack:
        places = []
        for index, namespace in enumerate(network.namespaces):
            root = Path(tempfile.mkdtemp(prefix="sge"))  # short: the socket's path
            stack.callback(shutil.rmtree, root, ignore_errors=True)
            slot = stack.enter_context(_cached_slot())
            places.append((namespace, network.address(index), root, slot, log_dir))
        engines: list[Engine] = []
        stack.callback(_stop_together, engines)  # before their roots and slots are let go
        engines.extend(Engine(*place) for place in places)

        def ready(engine: Engine) -> None:
            engine.wait_ready()
            engine.clear()  # what a session that died left
            for image in images:
                engine.ensure_image(image)

        with ThreadPoolExecutor(max_workers=len(engines) or 1) as pool:
            list(pool.map(ready, engines))  # a new slot's image loads, too, side by side
        yield engines


def _stop_together(engines: list[Engine]) -> None:
    """Clear and stop the engines at once: a dockerd in a swarm takes seconds to shut down."""
    with ThreadPoolExecutor(max_workers=len(engines) or 1) as pool:
        list(pool.map(_clear_and_stop, engines))


def _clear_and_stop(engine: Engine) -> None:
    try:
        if engine.process.poll() is None:
            engine.clear()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        # An engine wedged on a container (one attaching to an overlay whose manager was
        # lost): stopping it is what matters; the next start of its slot clears it.
        print(f"\nclearing the engine in {engine.namespace} failed: {error!r}")
    finally:
        engine.stop()


@contextmanager
def _cached_slot() -> Iterator[Path]:
    """The first data root no other session holds (a new one if all are held)."""
    ENGINE_CACHE_DIR.mkdir(parents=True, exist_ok=True)
    for number in range(64):
        lock = (ENGINE_CACHE_DIR / f"slot-{number}.lock").open("w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        try:
            yield ENGINE_CACHE_DIR / f"slot-{number}"
        finally:
            lock.close()
        return
    raise AssertionError(f"every engine slot under {ENGINE_CACHE_DIR} is held")


def swarm(engines: list[Engine], managers: int) -> None:
    """One swarm of the engines: the first `managers` of them managers (an odd number keeps the
    quorum when one is lost), the rest workers."""
    first = engines[0]
    first.docker("swarm", "init", "--advertise-addr", first.address)
    for index, engine in enumerate(engines[1:], start=1):
        join(engine, first, "manager" if index < managers else "worker")


def join(engine: Engine, manager: Engine, role: str) -> None:
    """`engine` joins the swarm `manager` manages, as a `role` ("manager" or "worker")."""
    token = manager.docker("swarm", "join-token", "-q", role)
    engine.docker("swarm", "join", "--advertise-addr", engine.address, "--token", token,
                  f"{manager.address}:{SWARM_PORT}")


def swarm_ready(manager: Engine, count: int) -> bool:
    """`manager`'s swarm has `count` nodes, all ready (and its managers reachable)."""
    nodes = manager.client.nodes.list()
    return len(nodes) == count and all(
        node.attrs["Status"]["State"] == "ready"
        and node.attrs.get("ManagerStatus", {}).get("Reachability", "reachable") == "reachable"
        for node in nodes
    )
