"""Which CPUs a container is pinned to (runtime/cpusets.py)."""

import pytest

from runtime import cpusets

GIB_CPU = 1_000_000_000


@pytest.mark.parametrize(
    "nano_cpus, available, count",
    [
        (2 * GIB_CPU, 16, 2),  # ml.m5.large on a large node: its 2 vCPUs
        (4 * GIB_CPU, 2, 2),  # ml.m4.xlarge (4 vCPUs) on a 2-CPU node: every CPU the node has
        (GIB_CPU // 2, 4, 1),  # half a CPU (an elastic replica's request): pinned to one
    ],
)
def test_a_container_is_pinned_to_its_quota_rounded_up_at_most_the_nodes_cpus(nano_cpus, available, count):
    assert cpusets.count_for(nano_cpus, available) == count


def test_the_least_used_cpus_are_chosen_lowest_first_on_a_tie():
    assert cpusets.least_used(2, [0, 1, 2, 3], []) == "0,1"
    assert cpusets.least_used(2, [0, 1, 2, 3], ["0,1"]) == "2,3"
    assert cpusets.least_used(2, [0, 1, 2, 3], ["0-2", "1"]) == "0,3"
    assert cpusets.least_used(2, [4, 5, 6], []) == "4,5"  # the node's own CPU numbers


@pytest.mark.parametrize(
    "cpuset, cpus", [("0-2,5", [0, 1, 2, 5]), ("3", [3]), ("", []), ("x", []), ("1-", []), ("-1", [])]
)
def test_cpusets_of_others_are_read_leniently(cpuset, cpus):
    assert cpusets.parse(cpuset) == cpus
