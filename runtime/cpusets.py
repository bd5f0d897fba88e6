"""Which of a node's CPUs a container runs on, so that it counts the CPUs of its instance type.

On SageMaker a container has its instance to itself: `nproc`, `os.cpu_count()` and everything
that sizes worker pools from them (gunicorn, torch's DataLoader, the inference toolkits) see the
instance type's vCPUs. Here several containers share a node, and a CPU quota alone (NanoCpus,
the cgroup's cpu.max) changes none of those counts. So a container with a CPU quota is also
pinned (`--cpuset-cpus`) to as many of the node's CPUs as its quota rounds up to:

- `nproc`, `os.sched_getaffinity(0)` and Python 3.13's `os.process_cpu_count()` read the
  affinity mask, which the cpuset sets;
- `os.cpu_count()` (and `multiprocessing.cpu_count()`) of Python before 3.13 count the host's
  online CPUs (/sys/devices/system/cpu/online), which no cgroup changes: they still say the
  node's count. Python 3.13 and later read PYTHON_CPU_COUNT instead, which the runtime sets to
  the pinned count (a request's own PYTHON_CPU_COUNT wins). Nothing is faked for older Pythons
  (no file is mounted over /sys): that count stays the node's.

A node with fewer CPUs than the instance type pins the container to all of them, with a quota of
all of them (`capacity.instance_types.container_limits`): it sees the node's count, not the
instance's. The CPUs chosen are those the fewest running Sageport containers on the engine are
pinned to (their `sageport.cpuset` label), lowest first on a tie; two containers created at the
same moment may pick the same CPUs, which costs only speed."""
import math
from collections import Counter
from collections.abc import Iterable, Sequence

_NANO_CPUS_PER_CPU = 1_000_000_000


def count_for(nano_cpus: int, available: int) -> int:
    """The CPUs a container with a quota of `nano_cpus` is pinned to: the quota rounded up,
    at most the `available` ones, at least one."""
    return max(1, min(math.ceil(nano_cpus / _NANO_CPUS_PER_CPU), available))


def least_used(count: int, cpus: Sequence[int], in_use: Iterable[str]) -> str:
    """`count` of `cpus` as Docker's cpuset list ("0,3"): those the fewest of the `in_use`
    cpusets name, the lowest numbers first among equals."""
    load = Counter(cpu for cpuset in in_use for cpu in parse(cpuset))
    chosen = sorted(cpus, key=lambda cpu: (load[cpu], cpu))[:count]
    return ",".join(str(cpu) for cpu in sorted(chosen))


def parse(cpuset: str) -> list[int]:
    """The CPUs of a cpuset list ("0-2,5" → [0, 1, 2, 5]); [] for an empty or malformed one (a
    label someone else wrote must not stop a container from starting)."""
    cpus: list[int] = []
    for part in filter(None, cpuset.split(",")):
        first, dash, last = part.partition("-")
        last = last if dash else first
        if not (first.isdigit() and last.isdigit()):
            return []
        cpus.extend(range(int(first), int(last) + 1))
    return cpus
