"""The job network across two Docker engines, as on two hosts: what a job spanning nodes relies on
(training/spans.py), checked through the runtime seam itself.

One machine allows it with two more engines, each in a network namespace of its own joined by a
veth pair whose addresses this test creates (no traffic leaves the machine, and the machine's own
engine is not touched): a swarm over them (the first a manager, the second a worker), the job's
attachable overlay network made on the manager, and one container per engine with its fixed
address and the /etc/hosts Sageport writes. Their packets cross between the namespaces in VXLAN,
as between hosts; what one machine cannot show (MTU, throughput, a real network between hosts)
is listed in docs/operations.md."""
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path

import docker
import pytest

from runtime.base import ContainerSpec, Mount, RuntimeError_
from runtime.docker import DockerRuntime
from tests.e2e.hosting import wait_until
from training import addresses

ENGINE_START_SECONDS = 60
# Each instance answers on 7000 and reaches every instance by name, as PEER_PROBE does
# (tests/e2e/test_training_distributed.py), printing what it reached.
PROBE = """
printf 'echo reachable' >/tmp/a
nc -ll -p 7000 -e sh /tmp/a &
for p in algo-1 algo-2; do
  for i in $(seq 50); do
    nc -w 1 $p 7000 </dev/null >/tmp/r 2>&1 && [ -s /tmp/r ] && echo "$(hostname) sees $p" && break
    sleep 0.2
  done
done
sleep 3
"""


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


class Engine:
    """A dockerd in a network namespace of its own (`nsenter --net`: `ip netns exec` would hide
    the cgroup mounts from it), with its own data, exec root and socket; stopped if it does not
    answer."""

    def __init__(self, namespace: str, root: Path):
        self.namespace, self.root = namespace, root
        self.socket = f"unix://{root}/d.sock"
        self.log = (root / "dockerd.log").open("wb")
        self.process = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{namespace}", "dockerd", "--data-root", str(root / "data"),
             "--exec-root", str(root / "exec"), "-H", self.socket, "--pidfile", str(root / "d.pid")],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        # The API version given: the client would otherwise ask the engine at once, not yet listening.
        self.client = docker.DockerClient(base_url=self.socket, version="1.41", timeout=30)
        try:
            wait_until(self._answers, timeout=ENGINE_START_SECONDS, what=f"dockerd in {namespace}")
        except BaseException:
            self.stop()
            raise

    def _answers(self) -> bool:
        assert self.process.poll() is None, (self.root / "dockerd.log").read_text()[-2000:]
        try:
            return self.client.ping()
        except Exception:  # not listening yet
            return False

    def docker(self, *argv: str, stdin: bytes | None = None) -> str:
        environment = {**os.environ, "DOCKER_HOST": self.socket}
        done = subprocess.run(["docker", *argv], input=stdin, check=True, capture_output=True, timeout=120,
                              env=environment)
        return done.stdout.decode().strip()

    def load(self, image_archive: bytes) -> None:
        self.docker("load", stdin=image_archive)

    def stop(self) -> None:
        self.client.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="module")
def two_engines(busybox_image):
    if os.geteuid() != 0 or not all(shutil.which(tool) for tool in ("dockerd", "nsenter", "ip")):
        pytest.skip("two more Docker engines in network namespaces need root, dockerd, nsenter and ip")
    suffix = uuid.uuid4().hex[:6]
    namespaces = [f"sgov{suffix}a", f"sgov{suffix}b"]
    links = [f"sgova{suffix}", f"sgovb{suffix}"]
    subnet = f"10.216.{int(suffix[:2], 16)}"
    roots = [Path(tempfile.mkdtemp(prefix="sgov")) for _ in namespaces]  # short: socket paths
    engines = []
    try:
        for namespace in namespaces:
            _run("ip", "netns", "add", namespace)
            _run("ip", "-n", namespace, "link", "set", "lo", "up")
        _run("ip", "link", "add", links[0], "netns", namespaces[0], "type", "veth",
             "peer", "name", links[1], "netns", namespaces[1])
        for index, (namespace, link) in enumerate(zip(namespaces, links, strict=True)):
            _run("ip", "-n", namespace, "addr", "add", f"{subnet}.{index + 1}/24", "dev", link)
            _run("ip", "-n", namespace, "link", "set", link, "up")
        for namespace, root in zip(namespaces, roots, strict=True):
            engines.append(Engine(namespace, root))
        saved = subprocess.run(["docker", "save", busybox_image], capture_output=True, check=True, timeout=99)
        for engine in engines:
            engine.load(saved.stdout)
        manager, worker = engines
        manager.docker("swarm", "init", "--advertise-addr", f"{subnet}.1")
        token = manager.docker("swarm", "join-token", "-q", "worker")
        worker.docker("swarm", "join", "--token", token, f"{subnet}.1:2377")
        yield manager, worker
    finally:
        for engine in engines:
            engine.stop()
        for namespace in namespaces:
            # Its end of the veth pair goes with it, and the peer with that.
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30)
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


def test_instances_on_two_engines_reach_each_other_by_name_on_the_jobs_overlay_network(
    two_engines, busybox_image, tmp_path
):
    manager, worker = (DockerRuntime(client=engine.client) for engine in two_engines)
    labels = {"sageport.resource": "arn:aws:sagemaker:us-east-1:123456789012:training-job/span"}
    # The job's node (a manager) creates the network; the other node's engine (a swarm worker,
    # which cannot create one) joins it by name on the subnet the first node recorded.
    subnet = manager.ensure_network("sageport-span-test", labels, subnets=["10.213.40.0/24"], overlay=True)
    assert worker.ensure_network("sageport-span-test", labels, subnets=[subnet], overlay=True) == subnet
    fixed = addresses.host_addresses(subnet, ["algo-1", "algo-2"])
    hosts_file = tmp_path / "hosts"  # what HostWorkspace.write_hosts gives every instance
    hosts_file.write_text("127.0.0.1\tlocalhost\n" + "".join(f"{a}\t{h}\n" for h, a in fixed.items()))

    runtimes = {"algo-1": manager, "algo-2": worker}
    for host, runtime in runtimes.items():
        runtime.run(ContainerSpec(
            name=f"sageport-span-test-{host}", image=busybox_image, labels=labels, entrypoint=["sh", "-c"],
            command=[PROBE], hostname=host, network="sageport-span-test", network_aliases=(host,),
            ipv4_address=fixed[host], mounts=(Mount(str(hosts_file), "/etc/hosts", read_only=True),),
        ))
    wait_until(lambda: all(runtime.find(labels)[0].exited for runtime in runtimes.values()), timeout=60,
               what="both instances to end")

    for host, runtime in runtimes.items():
        seen = {line.message for line in runtime.logs(f"sageport-span-test-{host}")}
        assert seen == {f"{host} sees algo-1", f"{host} sees algo-2"}, seen
        runtime.remove(f"sageport-span-test-{host}")

    def removed() -> bool:
        """The swarm releases the worker's attachment a moment after its container went."""
        try:
            manager.remove_network("sageport-span-test")
        except RuntimeError_:
            return False  # still in use
        return "sageport-span-test" not in [network.name for network in two_engines[0].client.networks.list()]

    wait_until(removed, timeout=60, what="the job's overlay network to be removed")


def test_with_encryption_configured_the_jobs_overlay_network_is_created_encrypted(two_engines, settings):
    """`SAGEPORT_OVERLAY_ENCRYPTED`: the engine's own network says so. Traffic over it needs IPsec
    ESP in the kernel (CONFIG_INET_ESP), which this machine's lacks, so only the setting's effect on
    the engine is checked here (docs/operations.md)."""
    settings.SAGEPORT_OVERLAY_ENCRYPTED = True
    manager = DockerRuntime(client=two_engines[0].client)
    labels = {"sageport.resource": "arn:aws:sagemaker:us-east-1:123456789012:training-job/sealed"}

    manager.ensure_network("sageport-sealed-test", labels, subnets=["10.213.41.0/24"], overlay=True)
    try:
        options = two_engines[0].client.networks.get("sageport-sealed-test").attrs["Options"]
        assert options.get("encrypted") == ""
    finally:
        manager.remove_network("sageport-sealed-test")
