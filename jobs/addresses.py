"""Fixed addresses for a container job's instances, so that `algo-1 … algo-N` resolve for the
job's whole life.

Docker's embedded DNS answers a container's alias only while that container runs: when algo-1
ends long before algo-2, a late lookup of algo-1 fails, and the sagemaker-training toolkit
(which resolves every host of resourceconfig.json before it runs the script, for up to 15
minutes) hangs. So each job's network gets a subnet of its own from
SAGEPORT_TRAINING_SUBNET_POOL, algo-i the address i+1 in it (the gateway is the first), and every
container's /etc/hosts (a file of the job's: `jobs/workspace.write_hosts`) lists all of them.
Without a network (EnableNetworkIsolation on one instance) the container's own name is the
loopback address."""
import ipaddress

from django.conf import settings

LOOPBACK = "127.0.0.1"
MAX_CANDIDATES = 64  # subnets offered per job before giving up (others may be taken)
_RESERVED = 3  # the network and broadcast addresses and the gateway


def candidate_subnets(job_id: int, instance_count: int, overlay: bool = False) -> list[str]:
    """Subnets of the pool big enough for the job, starting at one derived from its id (so that
    concurrent jobs rarely ask for the same one), in the order to try them. An overlay network
    keeps its upper half for the swarm's own addresses (runtime/docker.py), so it is twice as big.

    Overlays take theirs from the pool's upper half, an engine's own bridge networks from its
    lower half. An engine refuses a bridge that overlaps its networks, and the swarm an overlay
    that overlaps its overlays, but nothing compares an overlay with the bridges of the engines
    it will reach: a job's bridge on one node (an elastic job's, id 1) and another kind's overlay
    on the same subnet (a training job's, id 1) made that overlay's containers on that node fail
    to attach, its gateway's address in use there."""
    pool = _half(ipaddress.IPv4Network(settings.SAGEPORT_TRAINING_SUBNET_POOL), upper=overlay)
    needed = 2 * (instance_count + _RESERVED) if overlay else instance_count + _RESERVED
    prefix = min(24, 32 - (needed - 1).bit_length())
    if prefix < pool.prefixlen:
        return []
    size, count = 2 ** (32 - prefix), 2 ** (prefix - pool.prefixlen)
    base = int(pool.network_address)
    return [
        str(ipaddress.IPv4Network((base + ((job_id + offset) % count) * size, prefix)))
        for offset in range(min(count, MAX_CANDIDATES))
    ]


def _half(pool: ipaddress.IPv4Network, upper: bool) -> ipaddress.IPv4Network:
    lower_half, upper_half = pool.subnets(prefixlen_diff=1)
    return upper_half if upper else lower_half


def host_addresses(subnet: str, hosts: list[str]) -> dict[str, str]:
    """algo-i → the (i+1)-th address of the subnet, for `hosts` sorted as resourceconfig.json."""
    network = ipaddress.IPv4Network(subnet)
    return {host: str(network.network_address + 2 + index) for index, host in enumerate(hosts)}


def isolated_hosts(host: str) -> dict[str, str]:
    """A container without any network still resolves its own name."""
    return {host: LOOPBACK}
