"""How busy this node's NVIDIA GPUs are right now, by device index (what a container's
GPUUtilization and GPUMemoryUtilization add up: its GPUs are its own, never shared)."""
import logging
import shutil
import subprocess
from dataclasses import dataclass

log = logging.getLogger(__name__)

NVIDIA_SMI_QUERY = [
    "--query-gpu=index,utilization.gpu,memory.used,memory.total",
    "--format=csv,noheader,nounits",
]
# A reading is taken while a job runs: a driver that does not answer soon costs a reading, never the job.
NVIDIA_SMI_TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class GpuUse:
    utilization_percent: float  # 0-100
    memory_percent: float  # 0-100


def read() -> dict[str, GpuUse]:
    """Every GPU `nvidia-smi` reports now; none without it, or when it does not answer."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return {}
    try:
        completed = subprocess.run(
            [binary, *NVIDIA_SMI_QUERY], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_SECONDS
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("nvidia-smi did not answer, no GPU metrics this time: %s", exc)
        return {}
    if completed.returncode != 0:
        log.warning("nvidia-smi failed (%s), no GPU metrics this time", completed.returncode)
        return {}
    return parse(completed.stdout)


def parse(output: str) -> dict[str, GpuUse]:
    """Rows of `index, utilization.gpu, memory.used, memory.total` (csv, no header, no units); a
    row the driver cannot fill ("[N/A]", e.g. a MIG-partitioned GPU) is left out."""
    found = {}
    for line in output.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 4:
            continue
        index, utilization, used, total = fields
        try:
            use = GpuUse(float(utilization), 100.0 * float(used) / float(total))
        except (ValueError, ZeroDivisionError):
            continue
        found[index] = use
    return found
