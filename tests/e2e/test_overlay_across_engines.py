"""The job network across two Docker engines, as on two hosts: what a job spanning nodes relies on
(training/spans.py), checked through the runtime seam itself.

One machine allows it with two more engines, each in a network namespace of its own on a private
network this test creates (tests/e2e/engines.py: no traffic leaves the machine, and the machine's
own engine is not touched): a swarm over them (the first a manager, the second a worker), the job's
attachable overlay network made on the manager, and one container per engine with its fixed
address and the /etc/hosts Sageport writes. Their packets cross between the namespaces in VXLAN,
as between hosts; what one machine cannot show (MTU, throughput, a real network between hosts)
is listed in docs/operations.md."""
import pytest

from jobs import addresses
from runtime.base import ContainerSpec, Mount, RuntimeError_
from runtime.docker import DockerRuntime
from tests.e2e import engines
from tests.e2e.hosting import wait_until

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


@pytest.fixture(scope="module")
def two_engines(busybox_image):
    """Two engines on one private network (tests/e2e/engines.py), a swarm of a manager and a worker."""
    engines.require_namespaces()
    with engines.wire(2) as network, engines.engines_on(network, (busybox_image,)) as (manager, worker):
        engines.swarm([manager, worker], managers=1)
        yield manager, worker


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
