"""GPUs of the worker nodes, shared by training and hosting: which devices are free, which ones a
holder has, how a container is given them, and whether some are about to be given back.

A `GpuAllocation` row gives one device of one node to one holder (a training instance's
placement or a serving container); the unique constraint on (node, device) makes GPUs exclusive.
The features register `release_pending` hooks (GPUs their ended resources still hold), so this
module imports none of them."""
from collections.abc import Callable

from django.conf import settings
from django.db.models import Model

from capacity import instance_types
from capacity.models import GpuAllocation, Node

ACCELERATOR_NAMES = {"neuron": "AWS Trainium", "inferentia": "AWS Inferentia", "gaudi": "Habana Gaudi"}
# NVIDIA_VISIBLE_DEVICES for a container without GPUs.
NO_GPU_DEVICES = "void"

_release_pending_hooks: list[Callable[[str], bool]] = []


def free_gpus(node: Node) -> list[str]:
    """The node's devices that no training instance and no serving container holds, in order."""
    taken = set(GpuAllocation.objects.filter(node=node).values_list("device_id", flat=True))
    return [device for device in node.gpu_ids if device not in taken]


def gpu_ids(holder: Model) -> tuple[str, ...]:
    """The device ids a holder (a training instance's Placement or a ServingContainer) holds."""
    return tuple(sorted((gpu.device_id for gpu in holder.gpus.all()), key=_device_order))


def device_selection(gpu_ids: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(NVIDIA_VISIBLE_DEVICES, device ids for a Docker DeviceRequest) for a container given
    `gpu_ids`. Without GPUs, "void": the NVIDIA runtime then behaves like runc, even for CUDA
    images that set the variable to "all". In env-only mode no DeviceRequest is made: the
    variable alone selects the GPUs (nvidia as the default runtime; tests)."""
    visible = ",".join(gpu_ids) or NO_GPU_DEVICES
    return visible, (() if settings.SAGEPORT_GPU_DEVICE_MODE == "env-only" else gpu_ids)


def _device_order(device_id: str) -> tuple[int, str]:
    return (int(device_id), "") if device_id.isdigit() else (1 << 30, device_id)


def foreign_accelerator_reason(instance_type: instance_types.InstanceType) -> str:
    kind = ACCELERATOR_NAMES.get(instance_type.accelerator, instance_type.accelerator)
    return (
        f"ResourceLimitExceeded: {instance_type.name} needs {instance_type.gpus} {kind} "
        "devices per instance; Sageport schedules NVIDIA GPUs only, so no node can run it."
    )


def register_release_pending(hook: Callable[[str], bool]) -> None:
    """`hook(node_name)` answers whether resources that ended still hold GPUs of the node."""
    if hook not in _release_pending_hooks:
        _release_pending_hooks.append(hook)


def release_pending(node_name: str) -> bool:
    """Whether GPUs of the node are about to be freed by a resource that already ended."""
    return any(hook(node_name) for hook in _release_pending_hooks)
