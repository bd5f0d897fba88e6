"""A container job's instance metrics in CloudWatch, as SageMaker publishes them for training,
processing and batch transform jobs ("Monitor Amazon SageMaker with Amazon CloudWatch": Processing
Job, Training Job and Batch Transform Job Instance Metrics).

Namespace: the kind's, named as its log group (/aws/sagemaker/TrainingJobs, …/ProcessingJobs,
…/TransformJobs); one dimension, `Host=<job name>/<host>`; unit Percent; one value per instance
and minute, from one reading of its container:

- CPUUtilization: the CPU time it used over the time since this process's previous reading of
  it, else since it started; all cores added up (0-100 times the CPUs, as SageMaker's);
- MemoryUtilization: its memory use over its limit (its instance type's memory);
- DiskUtilization: what its workspace (its /opt/ml) holds over the volume's VolumeSizeInGB, at
  most 100; not for batch transform, where SageMaker publishes none;
- GPUUtilization, GPUMemoryUtilization: added up over the GPUs it was given (0-100 times the
  GPUs); only where it has some.

`publish` is called at each look at a running job and reads an instance only when its minute has
no value yet, so the values stay one per minute however often the job is looked at and whichever
worker process looks (two racing in the same minute add two values to it, as two publishers would
in CloudWatch). A reading that fails (the container just ended, the engine or nvidia-smi did not
answer) costs that minute's value, never the job."""
import threading
import time
from collections import OrderedDict

from capacity import gpu_usage
from jobs.identity import JobIdentity, JobKind
from jobs.workspace import host_root
from logs import histograms
from logs.metrics import HOST_DIMENSION, MinuteKey, StatisticSet, add_statistic_sets, recorded
from runtime.base import ContainerRuntime, ContainerState, ContainerStats, RuntimeError_
from storage import safe_files

CPU = "CPUUtilization"
MEMORY = "MemoryUtilization"
DISK = "DiskUtilization"
GPU = "GPUUtilization"
GPU_MEMORY = "GPUMemoryUtilization"
UNIT = "Percent"
MINUTE_MS = 60_000
_GIB = 1 << 30
_NS_PER_MS = 1_000_000


def namespace(kind: JobKind) -> str:
    """SageMaker's namespace of a kind's instance metrics is the name of its log group."""
    return kind.log_group


def host_dimension(job: JobIdentity, host: str) -> tuple[str, str]:
    return HOST_DIMENSION, f"{job.name}/{host}"


def publish(
    runtime: ContainerRuntime,
    job: JobIdentity,
    states: dict[str, ContainerState | None],
    volume_size_gb: int | None = None,
    now_ms: int | None = None,
) -> None:
    """This minute's values of every running instance (by host) that has none yet.
    `volume_size_gb`: the instances' storage volume; None where no DiskUtilization is published."""
    minute_ms = minute_of(time.time_ns() // _NS_PER_MS if now_ms is None else now_ms)
    due = {host: state for host, state in states.items() if is_due(job, host, state, minute_ms)}
    sets: dict[MinuteKey, StatisticSet] = {}
    gpus: dict[str, gpu_usage.GpuUse] | None = None  # read once per look, only if a container has GPUs
    for host, state in due.items():
        stats = _read(runtime, state)
        if stats is None:
            continue
        if stats.gpu_device_ids and gpus is None:
            gpus = gpu_usage.read()
        disk = _disk_bytes(job, host) if volume_size_gb else 0
        values = readings(stats, _CPU_READINGS.window(state.id, stats), disk, volume_size_gb, gpus or {})
        for name, value in values.items():
            sets[_key(job, host, name, minute_ms)] = _one_value(value)
    add_statistic_sets(sets)


def minute_of(timestamp_ms: int) -> int:
    return timestamp_ms - timestamp_ms % MINUTE_MS


def is_due(job: JobIdentity, host: str, state: ContainerState | None, minute_ms: int) -> bool:
    """A running instance whose minute has no value yet (MemoryUtilization stands for them all:
    every reading has one, where CPU needs time to have passed since the previous one)."""
    return state is not None and state.running and not recorded(_key(job, host, MEMORY, minute_ms))


def _key(job: JobIdentity, host: str, metric_name: str, minute_ms: int) -> MinuteKey:
    dimensions = (host_dimension(job, host),)
    space = namespace(job.kind)
    return MinuteKey(job.account_id, job.region, space, metric_name, dimensions, UNIT, minute_ms)


def _one_value(value: float) -> StatisticSet:
    """A minute of one value; its histogram answers the percentiles of longer periods."""
    return StatisticSet(1, value, value, value, histograms.of([value]))


def readings(
    stats: ContainerStats,
    cpu_window: tuple[int, int],
    disk_bytes: int,
    volume_size_gb: int | None,
    gpus: dict[str, gpu_usage.GpuUse],
) -> dict[str, float]:
    """The metrics one reading gives (pure): CPU over `cpu_window` (CPU ns used, ns elapsed),
    memory, disk when the volume is known, GPUs when the container has some that were read."""
    values = {}
    used_ns, elapsed_ns = cpu_window
    if elapsed_ns > 0:
        values[CPU] = 100.0 * used_ns / elapsed_ns
    values[MEMORY] = min(100.0 * stats.memory_used_bytes / stats.memory_limit_bytes, 100.0)
    if volume_size_gb:
        values[DISK] = min(100.0 * disk_bytes / (volume_size_gb * _GIB), 100.0)
    used = [gpus[device] for device in stats.gpu_device_ids if device in gpus]
    if used:
        values[GPU] = sum(use.utilization_percent for use in used)
        values[GPU_MEMORY] = sum(use.memory_percent for use in used)
    return values


def cpu_window(stats: ContainerStats, previous: ContainerStats | None) -> tuple[int, int]:
    """(CPU ns used, ns elapsed) since `previous`, a reading of the same container; since the
    container started when there is none (or it is not earlier)."""
    if previous is not None and previous.read_at_ns < stats.read_at_ns and previous.cpu_ns <= stats.cpu_ns:
        return stats.cpu_ns - previous.cpu_ns, stats.read_at_ns - previous.read_at_ns
    return stats.cpu_ns, stats.read_at_ns - stats.started_at_ns


class _CpuReadings:
    """This process's latest reading of each container, for the next minute's CPU window; the
    oldest are forgotten past MAX (their containers are long gone, or were read elsewhere)."""

    MAX = 1024

    def __init__(self):
        self._latest: OrderedDict[str, ContainerStats] = OrderedDict()
        self._lock = threading.Lock()  # a transform job's watcher thread publishes beside others

    def window(self, container_id: str, stats: ContainerStats) -> tuple[int, int]:
        with self._lock:
            previous = self._latest.pop(container_id, None)
            self._latest[container_id] = stats
            while len(self._latest) > self.MAX:
                self._latest.popitem(last=False)
        return cpu_window(stats, previous)


_CPU_READINGS = _CpuReadings()


def _read(runtime: ContainerRuntime, state: ContainerState) -> ContainerStats | None:
    try:
        return runtime.stats(state.name)
    except RuntimeError_:
        return None  # the engine did not answer: this minute goes without


def _disk_bytes(job: JobIdentity, host: str) -> int:
    """What the instance's workspace holds on disk, walked as a tree its container controls."""
    entries = safe_files.walk(host_root(job, host))
    return sum(entry.status.st_blocks * 512 for entry in entries if entry.kind == safe_files.FILE)
