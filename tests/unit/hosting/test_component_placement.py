"""Placing inference component copies on an endpoint's instances: what each instance has
(its type's vCPUs, memory, accelerators), what every copy on it reserves, spreading, all or none,
and the node and GPUs a copy gets."""

import pytest
from django.utils import timezone

from capacity.gpus import gpu_ids
from hosting import component_placement as cp
from hosting import placement
from hosting.models import ComponentCopy, DeploymentPhase, Endpoint, EndpointDeployment, InferenceComponent
from tests.unit.training.test_scheduler import make_node

GPU_TYPE = "ml.g5.12xlarge"  # 48 vCPUs, 192 GiB, 4 GPUs


def demand(cpus=0.0, memory_mb=1024, accelerators=0) -> cp.Demand:
    return cp.Demand(cpus, memory_mb, accelerators)


def test_copies_are_spread_over_the_instances():
    instances = cp.instances_of(GPU_TYPE, 2)
    assert cp.choose(instances, demand(accelerators=1), 3) == [0, 1, 0]


def test_copies_fill_an_instance_up_to_its_accelerators_and_no_further():
    assert cp.choose(cp.instances_of(GPU_TYPE, 1), demand(accelerators=1), 4) == [0, 0, 0, 0]
    assert cp.choose(cp.instances_of(GPU_TYPE, 1), demand(accelerators=1), 5) is None


def test_memory_and_cpus_bound_the_copies_of_a_cpu_instance():
    instances = cp.instances_of("ml.m5.xlarge", 1)  # 4 vCPUs, 16384 MiB
    assert cp.choose(instances, demand(cpus=1, memory_mb=8000), 2) == [0, 0]
    assert cp.choose(instances, demand(cpus=1, memory_mb=1000), 1) is None  # 384 MiB left
    assert cp.choose(cp.instances_of("ml.m5.xlarge", 1), demand(cpus=3), 2) is None  # 6 of 4 vCPUs


def test_what_other_copies_reserve_counts_but_not_as_the_components_own():
    instances = cp.instances_of(GPU_TYPE, 2)
    instances[0].reserve(demand(accelerators=3), own=False)
    # Instance 0 has one accelerator left: the first copy goes to the emptier instance 1.
    assert cp.choose(instances, demand(accelerators=2), 2) == [1, 1]
    assert instances[0].free().accelerators == 1


def test_a_shortage_says_what_was_asked_and_what_is_free():
    instances = cp.instances_of(GPU_TYPE, 1)
    message = cp.shortage("ic", demand(accelerators=2), 3, instances)
    assert message.startswith("ResourceLimitExceeded: inference component ic needs 3 more copies")
    assert "instance 1: 48 vCPUs, 196608 MiB, 4 accelerators" in message


def test_a_copy_larger_than_an_instance_is_named():
    problems = cp.larger_than_an_instance(demand(memory_mb=200000, accelerators=8), GPU_TYPE)
    assert problems == [
        "MinMemoryRequiredInMb 200000 is more than an ml.g5.12xlarge instance has (196608 MiB of memory).",
        "NumberOfAcceleratorDevicesRequired 8 is more than an ml.g5.12xlarge instance has "
        "(4 accelerator devices).",
    ]


# --- Rows ------------------------------------------------------------------------------------

_made = 0


def _endpoint(name: str, arn_type: str = "endpoint") -> Endpoint:
    now = timezone.now()
    return Endpoint.objects.create(
        account_id="123456789012", region="us-east-1", endpoint_name=name,
        endpoint_arn=f"arn:aws:sagemaker:us-east-1:123456789012:{arn_type}/{name}",
        endpoint_config_name=name, creation_time=now, last_modified_time=now,
    )


def _deployment(endpoint: Endpoint, variant: dict, count: int,
               phase=DeploymentPhase.PROVISIONING, models=None):
    now = timezone.now()
    return EndpointDeployment.objects.create(
        endpoint=endpoint, endpoint_config_name=endpoint.endpoint_name,
        snapshot={"EndpointConfig": {"ProductionVariants": [variant]}, "Models": models or {}},
        desired={"AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": count}},
        created_at=now, phase_changed_at=now, phase=phase,
    )


@pytest.fixture
def parent(db) -> Endpoint:
    endpoint = _endpoint("parent")
    variant = {"VariantName": "AllTraffic", "InstanceType": GPU_TYPE, "InitialInstanceCount": 2}
    _deployment(endpoint, variant, 2, phase=DeploymentPhase.ACTIVE)
    return endpoint


def component(parent: Endpoint, accelerators: int) -> EndpointDeployment:
    global _made
    _made += 1
    name = f"ic-{_made}"
    runner = _endpoint(name, "inference-component")
    InferenceComponent.objects.create(
        account_id="123456789012", region="us-east-1", inference_component_name=name,
        inference_component_arn=runner.endpoint_arn, endpoint=parent, variant_name="AllTraffic",
        runner=runner, specification={}, creation_time=timezone.now(),
    )
    requirements = {"MinMemoryRequiredInMb": 1024, "NumberOfAcceleratorDevicesRequired": accelerators}
    variant = {"VariantName": "AllTraffic", "ModelName": "m", "InstanceType": GPU_TYPE,
               "ComputeResourceRequirements": requirements}
    models = {"m": {"PrimaryContainer": {"Image": "serve:latest"}}}
    return _deployment(runner, variant, 1, models=models)


def test_copies_get_an_instance_a_node_and_their_own_gpus(parent):
    make_node(gpus=8)
    runner = component(parent, accelerators=1)

    assert cp.add_copies(runner, "AllTraffic", range(1, 3))

    rows = list(runner.containers.order_by("ordinal"))
    assert [ComponentCopy.objects.get(container=row).instance for row in rows] == [0, 1]
    assert [gpu_ids(row) for row in rows] == [("0",), ("1",)]


def test_another_component_sees_what_the_first_reserves(parent):
    make_node(gpus=8)
    assert cp.add_copies(component(parent, accelerators=3), "AllTraffic", range(1, 3))  # 3 on each
    second = component(parent, accelerators=2)

    with pytest.raises(placement.CapacityUnavailable, match="needs 1 more copy"):
        cp.add_copies(second, "AllTraffic", range(1, 2))
    assert not second.containers.exists()  # all or none


def test_a_copy_stays_on_the_node_of_its_instance_and_needs_its_gpus_free_there(parent):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=1)
    first = component(parent, accelerators=1)
    assert cp.add_copies(first, "AllTraffic", range(1, 3))  # instance 0 on node-a, instance 1 on node-a

    assert {row.node.name for row in first.containers.all()} == {"node-a"}
    with pytest.raises(placement.CapacityUnavailable, match="on node node-a, which has 0 free"):
        cp.add_copies(component(parent, accelerators=1), "AllTraffic", range(1, 2))
