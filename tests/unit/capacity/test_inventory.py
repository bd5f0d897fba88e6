"""The node inventory: GPUs from nvidia-smi or declared, sizes overridden by settings."""
from pathlib import Path

from capacity import inventory

# What `nvidia-smi` + NVIDIA_SMI_QUERY printed on a real H100 host (driver 580.159.04), verbatim.
RECORDED_H100_OUTPUT = (Path(__file__).parent / "data" / "nvidia-smi-h100.csv").read_text()

GIB = 1024 * 1024 * 1024
H100_SMI_OUTPUT = (
    "0, GPU-5c3e1e6a-6b1c-7d2f-0e8a-1f2b3c4d5e6f, NVIDIA H100 80GB HBM3, 81559\n"
    "1, GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d, NVIDIA H100 80GB HBM3, 81559\n"
)


def test_nvidia_smi_rows_become_gpus_with_index_uuid_name_and_memory():
    gpus = inventory.parse_nvidia_smi(H100_SMI_OUTPUT)
    assert [(gpu.id, gpu.name, gpu.memory_mib) for gpu in gpus] == [
        ("0", "NVIDIA H100 80GB HBM3", 81559),
        ("1", "NVIDIA H100 80GB HBM3", 81559),
    ]
    assert gpus[1].uuid == "GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"


def test_the_output_of_a_real_h100_host_is_parsed():
    (gpu,) = inventory.parse_nvidia_smi(RECORDED_H100_OUTPUT)
    assert (gpu.id, gpu.name, gpu.memory_mib) == ("0", "NVIDIA H100 80GB HBM3", 81559)
    assert gpu.uuid.startswith("GPU-") and len(gpu.uuid) == 40


def test_gpus_are_detected_with_nvidia_smi_when_none_are_declared(settings, tmp_path, monkeypatch):
    fake = tmp_path / "nvidia-smi"
    query = inventory.NVIDIA_SMI_QUERY[0]
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = \"{query}\" ] && printf '{H100_SMI_OUTPUT}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    settings.SAGEPORT_NODE_GPUS = ""
    assert [gpu.id for gpu in inventory.detect().gpus] == ["0", "1"]


def test_declared_gpus_and_sizes_override_detection(settings):
    settings.SAGEPORT_NODE_GPUS = "0, 2,5"
    settings.SAGEPORT_NODE_CPUS = 6
    settings.SAGEPORT_NODE_MEMORY_MIB = 2048
    found = inventory.detect()
    assert ([gpu.id for gpu in found.gpus], found.cpus, found.memory_bytes) == (["0", "2", "5"], 6, 2 * GIB)
    settings.SAGEPORT_NODE_GPUS = "none"
    assert inventory.detect().gpus == ()
