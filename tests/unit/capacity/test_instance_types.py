import botocore.session
import pytest

from capacity.instance_types import UnknownInstanceType, container_limits, largest_that_fits, lookup

GIB = 1024 * 1024 * 1024


def _enum(shape_name: str) -> list[str]:
    return botocore.session.get_session().get_service_model("sagemaker").shape_for(shape_name).enum


@pytest.mark.parametrize("shape_name", ["TrainingInstanceType", "ProductionVariantInstanceType"])
def test_every_instance_type_of_the_api_enum_resolves(shape_name):
    for name in _enum(shape_name):
        instance = lookup(name)
        assert instance.vcpus > 0 and instance.memory_mib > 0, name
        assert (instance.gpus > 0) == (instance.accelerator is not None), name


@pytest.mark.parametrize(
    "name, vcpus, memory_gib, gpus, model",
    [
        ("ml.p3.2xlarge", 8, 61, 1, "V100"),
        ("ml.p3.8xlarge", 32, 244, 4, "V100"),
        ("ml.p3.16xlarge", 64, 488, 8, "V100"),
        ("ml.p3dn.24xlarge", 96, 768, 8, "V100"),
        ("ml.p4d.24xlarge", 96, 1152, 8, "A100"),
        ("ml.p4de.24xlarge", 96, 1152, 8, "A100"),
        ("ml.p5.4xlarge", 16, 256, 1, "H100"),
        ("ml.p5.48xlarge", 192, 2048, 8, "H100"),
        ("ml.p6-b200.48xlarge", 192, 2048, 8, "B200"),
        ("ml.g4dn.xlarge", 4, 16, 1, "T4"),
        ("ml.g4dn.12xlarge", 48, 192, 4, "T4"),
        ("ml.g4dn.16xlarge", 64, 256, 1, "T4"),
        ("ml.g5.xlarge", 4, 16, 1, "A10G"),
        ("ml.g5.12xlarge", 48, 192, 4, "A10G"),
        ("ml.g5.24xlarge", 96, 384, 4, "A10G"),
        ("ml.g5.48xlarge", 192, 768, 8, "A10G"),
        ("ml.g6.16xlarge", 64, 256, 1, "L4"),
        ("ml.g6e.12xlarge", 48, 384, 4, "L40S"),
    ],
)
def test_well_known_gpu_instance_types_have_aws_figures(name, vcpus, memory_gib, gpus, model):
    instance = lookup(name)
    assert (instance.vcpus, instance.memory_mib, instance.gpus, instance.gpu_model) == (
        vcpus,
        memory_gib * 1024,
        gpus,
        model,
    )
    assert instance.accelerator == "nvidia"


@pytest.mark.parametrize(
    "name, vcpus, memory_mib",
    [("ml.m5.large", 2, 8192), ("ml.c4.8xlarge", 36, 61440), ("ml.c5.9xlarge", 36, 73728),
     ("ml.t2.medium", 2, 4096), ("ml.r5.24xlarge", 96, 786432)],
)
def test_cpu_instance_types_follow_their_family_with_aws_exceptions(name, vcpus, memory_mib):
    instance = lookup(name)
    assert (instance.vcpus, instance.memory_mib, instance.gpus, instance.accelerator) == (
        vcpus, memory_mib, 0, None
    )


def test_non_nvidia_accelerators_are_named_so_no_gpu_is_assigned_to_them():
    assert (lookup("ml.trn1.32xlarge").accelerator, lookup("ml.trn1.32xlarge").gpus) == ("neuron", 16)
    assert lookup("ml.inf2.xlarge").accelerator == "inferentia"
    assert lookup("ml.dl1.24xlarge").accelerator == "gaudi"


@pytest.mark.parametrize("name", ["ml.local", "local_gpu", "p3.2xlarge", "ml.p3.4xlarge", "ml.m5.metal", ""])
def test_unknown_instance_types_are_rejected(name):
    with pytest.raises(UnknownInstanceType):
        lookup(name)


def test_container_limits_are_the_instance_size_on_a_large_host():
    assert container_limits("ml.m5.large", host_cpus=64, host_memory_bytes=512 * GIB) == (
        2_000_000_000,
        8 * GIB,
    )


def test_container_limits_are_capped_at_the_host_size():
    assert container_limits(lookup("ml.p4d.24xlarge"), host_cpus=2, host_memory_bytes=7 * GIB) == (
        2_000_000_000,
        7 * GIB,
    )


HYPERPOD_SAMPLE = ["ml.t3.medium", "ml.c5.large", "ml.m5.large", "ml.m5.xlarge", "ml.r6i.large",
                   "ml.g5.xlarge", "ml.g5.12xlarge", "ml.trn1.32xlarge", "ml.i3en.large"]


def test_a_node_stands_for_the_largest_type_its_size_fits():
    fits = largest_that_fits
    # 2 CPUs, 8 GiB: m5.large (2, 8 GiB) beats c5.large (2, 4 GiB); r6i.large needs 16 GiB.
    assert fits(HYPERPOD_SAMPLE, 2, 8 * 1024, 0) == "ml.m5.large"
    # Slightly less than 8 GiB (what a "8 GiB" machine reports): the next smaller fits, and of
    # c5.large and t3.medium (2 vCPUs, 4 GiB each) the first name.
    assert fits(HYPERPOD_SAMPLE, 2, 8 * 1024 - 100, 0) == "ml.c5.large"
    # GPUs come first: a 48-CPU, 192 GiB node with 4 NVIDIA GPUs is a g5.12xlarge.
    assert fits(HYPERPOD_SAMPLE, 48, 192 * 1024, 4) == "ml.g5.12xlarge"
    # GPUs without the CPUs of any GPU type: a CPU type; Trainium never fits an NVIDIA node.
    assert fits(HYPERPOD_SAMPLE, 2, 8 * 1024, 4) == "ml.m5.large"
    assert fits(HYPERPOD_SAMPLE, 1, 1024, 0) == ""  # nothing fits
    assert fits(list(reversed(HYPERPOD_SAMPLE)), 2, 8 * 1024, 0) == "ml.m5.large"  # order does not matter
