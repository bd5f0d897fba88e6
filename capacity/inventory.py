"""What this worker host offers: CPUs, memory and NVIDIA GPUs.

GPUs are found with `nvidia-smi` when it is installed, or declared with SAGEPORT_NODE_GPUS (so
the scheduler can be run and tested on machines without GPUs); CPUs and memory are the host's
unless SAGEPORT_NODE_CPUS / SAGEPORT_NODE_MEMORY_MIB say otherwise. Its instance type (what a
HyperPod cluster's instance groups match nodes by) is SAGEPORT_NODE_INSTANCE_TYPE, or else the
largest HyperPod instance type of the catalog that the host's size can stand for."""
import logging
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass

from django.conf import settings

from capacity import instance_types
from protocol import shapes

log = logging.getLogger(__name__)

NVIDIA_SMI_QUERY = ["--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits"]
NVIDIA_SMI_TIMEOUT_SECONDS = 30
NO_GPUS = "none"


@dataclass(frozen=True)
class Gpu:
    id: str  # what Docker's DeviceRequest and NVIDIA_VISIBLE_DEVICES take: the device index
    uuid: str = ""
    name: str = ""
    memory_mib: int = 0


@dataclass(frozen=True)
class Inventory:
    name: str
    cpus: int
    memory_bytes: int
    gpus: tuple[Gpu, ...]
    instance_type: str = ""  # "" when declared by no setting and no catalog type fits

    def gpus_as_json(self) -> list[dict]:
        return [asdict(gpu) for gpu in self.gpus]


class InventoryError(RuntimeError):
    """nvidia-smi is installed but did not answer: the node must not start with a wrong GPU count."""


def detect() -> Inventory:
    cpus = settings.SAGEPORT_NODE_CPUS or os.cpu_count() or 1
    memory_bytes = settings.SAGEPORT_NODE_MEMORY_MIB * 1024 * 1024 or _physical_memory_bytes()
    gpus = _gpus(settings.SAGEPORT_NODE_GPUS)
    return Inventory(
        name=settings.SAGEPORT_NODE_NAME,
        cpus=cpus,
        memory_bytes=memory_bytes,
        gpus=gpus,
        instance_type=settings.SAGEPORT_NODE_INSTANCE_TYPE
        or instance_types.largest_that_fits(cluster_instance_types(), cpus, memory_bytes >> 20, len(gpus)),
    )


def cluster_instance_types() -> list[str]:
    """The instance types a HyperPod instance group may name (botocore's ClusterInstanceType):
    a node's type only matters to clusters, so a default is chosen among these."""
    return list(shapes.service_model("sagemaker").shape_for("ClusterInstanceType").enum)


def _physical_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _gpus(declared: str) -> tuple[Gpu, ...]:
    if declared.lower() == NO_GPUS:
        return ()
    if declared:
        return tuple(Gpu(id=device.strip()) for device in declared.split(",") if device.strip())
    return detect_nvidia_gpus()


def detect_nvidia_gpus() -> tuple[Gpu, ...]:
    """The GPUs `nvidia-smi` lists; none when it is not installed."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return ()
    try:
        completed = subprocess.run(
            [binary, *NVIDIA_SMI_QUERY], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_SECONDS
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InventoryError(f"nvidia-smi did not answer: {exc}") from None
    if completed.returncode != 0:
        raise InventoryError(f"nvidia-smi failed ({completed.returncode}): {completed.stderr.strip()}")
    return parse_nvidia_smi(completed.stdout)


def parse_nvidia_smi(output: str) -> tuple[Gpu, ...]:
    """Rows of `index, uuid, name, memory.total` (csv, no header, no units)."""
    gpus = []
    for line in output.splitlines():
        if not line.strip():
            continue
        index, uuid, rest = line.split(",", 2)
        name, memory = rest.rsplit(",", 1)  # split from the right: a name could hold a comma
        memory_mib = int(float(memory))
        gpus.append(Gpu(id=index.strip(), uuid=uuid.strip(), name=name.strip(), memory_mib=memory_mib))
    return tuple(gpus)
