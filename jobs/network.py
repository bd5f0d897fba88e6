"""A container job's own network and where its instances are on it.

A lone network-isolated instance gets no network at all; any other job gets one of its own
(internal when isolated: its instances reach each other and nothing else), with a subnet from
the pool so that every instance has a fixed address (jobs/addresses.py says why)."""
from dataclasses import dataclass

from jobs import addresses
from jobs.identity import JobIdentity, job_labels, network_name
from runtime.base import ContainerRuntime


@dataclass(frozen=True)
class JobNetwork:
    subnet: str  # the network's, as the engine answers it
    addressed: bool  # whether its instances have fixed addresses (the pool offered subnets)

    @property
    def address_subnet(self) -> str | None:
        """The subnet fixed addresses are taken from; None without them (Docker's DNS answers)."""
        return self.subnet if self.addressed else None


def needs_network(isolated: bool, instance_count: int) -> bool:
    return not (isolated and instance_count == 1)


def ensure(
    runtime: ContainerRuntime, job: JobIdentity, instance_count: int, *, isolated: bool,
    overlay: bool = False, recorded: str = "",
) -> JobNetwork:
    """Create the job's network unless it exists (idempotent). `recorded`: the subnet another
    node's network of the job already got (an overlay joined, not made)."""
    subnets = [recorded] if recorded else addresses.candidate_subnets(job.id, instance_count, overlay)
    subnet = runtime.ensure_network(
        network_name(job.kind, job.id), job_labels(job), internal=isolated, subnets=subnets, overlay=overlay
    )
    return JobNetwork(subnet, bool(subnets))


def container_settings(
    job: JobIdentity, host: str, hosts: list[str], isolated: bool, subnet: str | None
) -> dict:
    """The ContainerSpec's network fields for instance `host` of `hosts`."""
    if not needs_network(isolated, len(hosts)):
        return {"network": "none"}
    return {
        "network": network_name(job.kind, job.id),
        "network_aliases": (host,),
        "ipv4_address": host_entries(host, hosts, isolated, subnet).get(host),
    }


def host_entries(host: str, hosts: list[str], isolated: bool, subnet: str | None) -> dict[str, str]:
    """What the container's /etc/hosts names: every host at its fixed address; its own name
    alone, on the loopback, without a network; nothing without a subnet (then Docker's DNS
    answers the aliases)."""
    if not needs_network(isolated, len(hosts)):
        return addresses.isolated_hosts(host)
    return addresses.host_addresses(subnet, hosts) if subnet else {}
