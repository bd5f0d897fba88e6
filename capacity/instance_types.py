"""The SageMaker instance-type catalog: what an `ml.*` name means in vCPUs, memory and accelerators.

Figures are AWS's published ones. Rather than a 350-row table, a type is derived from its family
(memory per vCPU, accelerator, device count per size) and its size word (`xlarge` = 4 vCPUs,
`Nxlarge` = 4N vCPUs); the few types that break the family rule are listed as exceptions."""
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

Accelerator = Literal["nvidia", "neuron", "inferentia", "gaudi"]

_MIB_PER_GIB = 1024
_NANO_CPUS_PER_CPU = 1_000_000_000


class UnknownInstanceType(ValueError):
    """The name is not an instance type this catalog knows (e.g. `ml.local`)."""


@dataclass(frozen=True)
class InstanceType:
    name: str  # "ml.p3.2xlarge"
    vcpus: int
    memory_mib: int
    gpus: int  # accelerator devices of kind `accelerator` (GPUs, Neuron or Gaudi devices); 0 for none
    gpu_model: str | None
    accelerator: Accelerator | None


@dataclass(frozen=True)
class _Family:
    gib_per_vcpu: float
    accelerator: Accelerator | None = None
    device_model: str | None = None
    # Accelerated families exist only in the listed sizes; CPU families in any size.
    devices_by_size: dict[str, int] = field(default_factory=dict)


def _sizes(**counts: int) -> dict[str, int]:
    """`_sizes(x1=1, x12=4)` → {"xlarge": 1, "12xlarge": 4}; keeps the family table readable."""
    return {("xlarge" if key == "x1" else f"{key[1:]}xlarge"): count for key, count in counts.items()}


# g4dn/g5/g6/g6e share one layout: one GPU up to 16xlarge, four at 12x/24xlarge, eight at 48xlarge.
_G_LAYOUT = _sizes(x1=1, x2=1, x4=1, x8=1, x16=1, x12=4, x24=4, x48=8)
# g7/g7e start at 2xlarge and grow to two GPUs at 12xlarge.
_G7_LAYOUT = _sizes(x2=1, x4=1, x8=1, x12=2, x24=4, x48=8)

_CPU_FAMILIES = {
    **dict.fromkeys(
        ["c5", "c5d", "c6g", "c6gd", "c6gn", "c6i", "c6in", "c7g", "c7i", "c7i-flex", "c8g", "c8i",
         "c8i-flex"],
        _Family(2),
    ),
    "c4": _Family(1.875),
    "c5n": _Family(2.625),
    **dict.fromkeys(
        ["m4", "m5", "m5d", "m6g", "m6gd", "m6i", "m7i", "m7i-flex", "m8g", "m8i", "m8i-flex", "t2", "t3"],
        _Family(4),
    ),
    **dict.fromkeys(
        ["r5", "r5d", "r6g", "r6gd", "r6i", "r7gd", "r7i", "r8g", "r8i", "r8i-flex"], _Family(8)
    ),
}

_ACCELERATED_FAMILIES = {
    "p2": _Family(15.25, "nvidia", "K80", _sizes(x1=1, x8=8, x16=16)),
    "p3": _Family(7.625, "nvidia", "V100", _sizes(x2=1, x8=4, x16=8)),
    "p3dn": _Family(8, "nvidia", "V100", _sizes(x24=8)),
    "p4d": _Family(12, "nvidia", "A100", _sizes(x24=8)),
    "p4de": _Family(12, "nvidia", "A100", _sizes(x24=8)),
    "p5": _Family(16, "nvidia", "H100", _sizes(x4=1, x48=8)),
    # Single-size families: memory GiB / vCPUs straight from the spec sheet.
    "p5e": _Family(2048 / 192, "nvidia", "H200", _sizes(x48=8)),
    "p5en": _Family(2048 / 192, "nvidia", "H200", _sizes(x48=8)),
    "p6-b200": _Family(2048 / 192, "nvidia", "B200", _sizes(x48=8)),
    "p6-b300": _Family(4096 / 192, "nvidia", "B300", _sizes(x48=8)),
    "p6e-gb200": _Family(960 / 144, "nvidia", "B200", _sizes(x36=4)),
    "g4dn": _Family(4, "nvidia", "T4", {**_G_LAYOUT, "metal": 8}),
    "g5": _Family(4, "nvidia", "A10G", _G_LAYOUT),
    "g6": _Family(4, "nvidia", "L4", _G_LAYOUT),
    "g6e": _Family(8, "nvidia", "L40S", _G_LAYOUT),
    "g7": _Family(4, "nvidia", "RTX PRO 4500", _G7_LAYOUT),
    "g7e": _Family(8, "nvidia", "RTX PRO 6000", _G7_LAYOUT),
    "inf1": _Family(2, "inferentia", "Inferentia", _sizes(x1=1, x2=1, x6=4, x24=16)),
    "inf2": _Family(4, "inferentia", "Inferentia2", _sizes(x1=1, x8=1, x24=6, x48=12)),
    "trn1": _Family(4, "neuron", "Trainium", _sizes(x2=1, x32=16)),
    "trn1n": _Family(4, "neuron", "Trainium", _sizes(x32=16)),
    "trn2": _Family(2048 / 192, "neuron", "Trainium2", _sizes(x48=16)),
    "dl1": _Family(8, "gaudi", "Gaudi", _sizes(x24=8)),
}

# (vCPUs, memory GiB) where AWS departs from the family rule.
_EXCEPTIONS: dict[str, tuple[int, float]] = {
    "c4.8xlarge": (36, 60),
    "c5n.9xlarge": (36, 96),
    "c5n.18xlarge": (72, 192),
    "t2.medium": (2, 4),
    "t3.medium": (2, 4),
    "p2.16xlarge": (64, 732),
    "p5.48xlarge": (192, 2048),
    "g4dn.metal": (96, 384),
}

_SIZE = re.compile(r"(?:(\d+)x|x)?large|medium")


def _vcpus_for_size(size: str) -> int | None:
    match = _SIZE.fullmatch(size)
    if match is None:
        return None
    if size == "medium":
        return 1
    if size == "large":
        return 2
    return 4 * int(match.group(1) or 1)


def unknown_type_problems(name: str, where: str) -> list[str]:
    """The validation message for an instance type the catalog does not know (none if known)."""
    try:
        lookup(name)
    except UnknownInstanceType:
        return [f"{where}InstanceType '{name}' is not a known instance type."]
    return []


def lookup(name: str) -> InstanceType:
    """The catalog entry for an `ml.<family>.<size>` name; UnknownInstanceType otherwise."""
    family_name, _, size = name.removeprefix("ml.").rpartition(".")
    family = _CPU_FAMILIES.get(family_name) or _ACCELERATED_FAMILIES.get(family_name)
    if not name.startswith("ml.") or family is None:
        raise UnknownInstanceType(f"Unknown instance type {name!r}")
    devices = family.devices_by_size.get(size, 0)
    if family.accelerator is not None and devices == 0:
        raise UnknownInstanceType(f"Unknown instance type {name!r}: {family_name} has no size {size!r}")
    short_name = f"{family_name}.{size}"
    if short_name in _EXCEPTIONS:
        vcpus, memory_gib = _EXCEPTIONS[short_name]
    else:
        vcpus = _vcpus_for_size(size)
        if vcpus is None:
            raise UnknownInstanceType(f"Unknown instance type {name!r}: unrecognised size {size!r}")
        memory_gib = vcpus * family.gib_per_vcpu
    return InstanceType(
        name=name,
        vcpus=vcpus,
        memory_mib=round(memory_gib * _MIB_PER_GIB),
        gpus=devices,
        gpu_model=family.device_model,
        accelerator=family.accelerator,
    )


def largest_that_fits(candidates: Iterable[str], cpus: int, memory_mib: int, nvidia_gpus: int) -> str:
    """The largest of `candidates` a host of this size can stand for, or "" when none fits.

    A type fits when its vCPUs and memory are at most the host's and it is a CPU type or an NVIDIA
    type with at most the host's GPUs (other accelerators never fit: nodes report NVIDIA GPUs
    only). Largest means most GPUs, then most vCPUs, then most memory, then the first name in
    alphabetical order, so the answer never depends on the candidates' order. Names the catalog
    does not know are skipped."""
    fitting = []
    for name in candidates:
        try:
            spec = lookup(name)
        except UnknownInstanceType:
            continue
        if spec.accelerator not in (None, "nvidia"):
            continue
        if spec.vcpus <= cpus and spec.memory_mib <= memory_mib and spec.gpus <= nvidia_gpus:
            fitting.append((-spec.gpus, -spec.vcpus, -spec.memory_mib, spec.name))
    return min(fitting)[3] if fitting else ""


def container_limits(
    instance_type: InstanceType | str, host_cpus: int, host_memory_bytes: int
) -> tuple[int, int]:
    """(nano_cpus, memory_bytes) for one container of `instance_type`, capped at the host's size:
    a development machine smaller than the requested instance still runs the job."""
    spec = lookup(instance_type) if isinstance(instance_type, str) else instance_type
    cpus = min(spec.vcpus, host_cpus)
    memory_bytes = min(spec.memory_mib * 1024 * 1024, host_memory_bytes)
    return cpus * _NANO_CPUS_PER_CPU, memory_bytes
