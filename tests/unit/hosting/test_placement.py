"""Placing serving containers: on live nodes only, spread over them, each with GPUs of its node
that are exclusive with training jobs', all or none per step, given back with the container's
row; what the container gets; and the nodes an endpoint's reconcile chain visits."""
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from capacity.gpus import gpu_ids
from capacity.models import GpuAllocation, Node
from hosting import containers as hosting_containers
from hosting import placement
from hosting.models import ContainerStatus, Endpoint, EndpointDeployment, ServingContainer
from tests.unit.training.test_scheduler import make_job, make_node
from training import scheduler
from training.models import TrainingJob

_created = 0


def make_deployment(instance_type: str) -> EndpointDeployment:
    global _created
    _created += 1
    now = timezone.now()
    endpoint = Endpoint.objects.create(
        account_id="123456789012", region="us-east-1", endpoint_name=f"endpoint-{_created}",
        endpoint_arn=f"arn:aws:sagemaker:us-east-1:123456789012:endpoint/endpoint-{_created}",
        endpoint_config_name="config", creation_time=now, last_modified_time=now,
    )
    variant = {"VariantName": "AllTraffic", "ModelName": "model", "InstanceType": instance_type}
    return EndpointDeployment.objects.create(
        endpoint=endpoint, endpoint_config_name="config",
        snapshot={
            "EndpointConfig": {"ProductionVariants": [variant]},
            "Models": {"model": {"PrimaryContainer": {"Image": "serve:latest", "Environment": {}}}},
        },
        desired={"AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": 1}},
        created_at=now, phase_changed_at=now,
    )


def add(deployment: EndpointDeployment, count: int = 1, first: int = 1) -> bool:
    return placement.add_containers(deployment, "AllTraffic", range(first, first + count))


def gpus_of(deployment: EndpointDeployment) -> list[tuple[str, ...]]:
    return [gpu_ids(row) for row in deployment.containers.all()]


def test_each_container_of_a_gpu_type_gets_its_own_free_gpus(db):
    make_node(gpus=4)
    two_single = make_deployment("ml.g5.xlarge")  # one GPU each
    assert add(two_single, count=2)
    assert gpus_of(two_single) == [("0",), ("1",)]


def test_serving_and_training_never_share_a_gpu(db):
    make_node(gpus=4)
    training = make_job("ml.p3.2xlarge", count=2)
    assert scheduler.place(training) == scheduler.Placed("node-a")  # takes 0 and 1
    serving = make_deployment("ml.g5.xlarge")
    assert add(serving, count=2)
    assert gpus_of(serving) == [("2",), ("3",)]

    waiting = scheduler.place(make_job("ml.p3.2xlarge"))  # serving holds what is left
    assert isinstance(waiting, scheduler.Waiting) and "node-a: 0 of 4" in waiting.reason


def test_too_few_free_gpus_create_no_container_and_say_what_was_asked_and_what_is_free(db):
    make_node(gpus=4)
    assert add(make_deployment("ml.g5.xlarge"))
    four = make_deployment("ml.g5.12xlarge")
    with pytest.raises(placement.CapacityUnavailable) as refused:
        add(four)
    assert str(refused.value) == (
        "ResourceLimitExceeded: production variant AllTraffic (ml.g5.12xlarge) needs 4 NVIDIA GPUs "
        "for 1 more container (4 each, each on one node); GPUs free: node-a has 3 of its 4."
    )
    assert not four.containers.exists()


def test_a_step_gets_gpus_for_all_its_containers_or_for_none(db):
    make_node(gpus=4)
    deployment = make_deployment("ml.g5.xlarge")
    with pytest.raises(placement.CapacityUnavailable, match="needs 5 NVIDIA GPUs for 5 more containers"):
        add(deployment, count=5)
    assert not deployment.containers.exists() and not GpuAllocation.objects.exists()


def test_removing_a_container_row_gives_its_gpus_back(db):
    make_node(gpus=4)
    holder = make_deployment("ml.g5.12xlarge")
    assert add(holder)
    holder.containers.get().delete()
    assert scheduler.place(make_job("ml.g5.12xlarge")) == scheduler.Placed("node-a")


def test_deleting_the_endpoint_gives_its_gpus_back(db):
    make_node(gpus=4)
    holder = make_deployment("ml.g5.12xlarge")
    assert add(holder)
    holder.endpoint.delete()
    assert not GpuAllocation.objects.exists()


def test_cpu_types_hold_no_gpu_and_other_accelerators_are_refused(db):
    make_node(gpus=4)
    cpu = make_deployment("ml.m5.large")
    assert add(cpu, count=3)
    assert gpus_of(cpu) == [(), (), ()]
    with pytest.raises(placement.CapacityUnavailable, match="ml.inf2.xlarge needs 1 AWS Inferentia"):
        add(make_deployment("ml.inf2.xlarge"))


def test_without_a_live_node_no_container_is_placed(db):
    make_node(name="gone", lost=True)
    with pytest.raises(placement.CapacityUnavailable, match="needs a worker node, and no node is alive"):
        add(make_deployment("ml.m5.large"))


def nodes_of(deployment: EndpointDeployment) -> list[str]:
    return [row.node.name for row in deployment.containers.order_by("ordinal")]


def test_containers_of_a_variant_are_spread_over_the_live_nodes(db):
    make_node("node-a", gpus=0)
    make_node("node-b", gpus=0)
    make_node("node-c", gpus=0, lost=True)
    deployment = make_deployment("ml.m5.large")
    assert add(deployment, count=3)
    assert nodes_of(deployment) == ["node-a", "node-b", "node-a"]
    assert placement.rotation(deployment.endpoint_id) == ["node-a", "node-b"]


def test_a_gpu_container_goes_where_its_gpus_are_free_and_a_container_never_spans_nodes(db):
    make_node("node-a", gpus=1)
    make_node("node-b", gpus=4)
    deployment = make_deployment("ml.g5.12xlarge")  # four GPUs each
    assert add(deployment)
    assert nodes_of(deployment) == ["node-b"]
    with pytest.raises(placement.CapacityUnavailable, match="GPUs free: node-a has 1 of its 1, node-b has 0"):
        add(deployment, first=2)


def test_the_chain_visits_only_live_nodes_that_hold_containers(db, settings):
    settings.SAGEPORT_NODE_LOST_AFTER_SECONDS = 60
    make_node("node-a", gpus=0)
    stale = make_node("node-b", gpus=0)
    deployment = make_deployment("ml.m5.large")
    assert placement.rotation(deployment.endpoint_id) == []
    assert add(deployment, count=2)
    Node.objects.filter(pk=stale.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    assert placement.rotation(deployment.endpoint_id) == ["node-a"]


def test_a_gpu_is_held_by_a_placement_or_a_serving_container_never_both_nor_neither(db):
    node = make_node(gpus=4)
    job = make_job("ml.p3.2xlarge")
    scheduler.place(job)
    deployment = make_deployment("ml.m5.large")
    assert add(deployment)
    both = {"placement": scheduler.placement_of(job, "algo-1"), "container": deployment.containers.get()}
    for holders in (both, {}):
        with pytest.raises(IntegrityError), transaction.atomic():
            GpuAllocation.objects.create(node=node, device_id="3", **holders)


def test_gpus_of_outgoing_containers_and_of_ended_training_jobs_are_coming_back(db):
    make_node(gpus=4)
    deployment = make_deployment("ml.g5.xlarge")
    assert add(deployment)
    job = make_job("ml.p3.2xlarge")
    scheduler.place(job)
    assert not placement.gpus_coming_back(deployment.endpoint)

    TrainingJob.objects.filter(pk=job.pk).update(training_job_status="Completed")
    assert placement.gpus_coming_back(deployment.endpoint)
    scheduler.release(job)
    ServingContainer.objects.update(status=ContainerStatus.DRAINING)
    assert placement.gpus_coming_back(deployment.endpoint)


@pytest.mark.parametrize(
    "mode, instance_type, visible, requested",
    [
        ("device-request", "ml.g5.xlarge", "0", ("0",)),
        ("env-only", "ml.g5.xlarge", "0", ()),
        ("device-request", "ml.m5.large", "void", ()),
    ],
)
def test_the_container_gets_its_gpus_and_the_model_environment_cannot_widen_them(
    db, settings, mode, instance_type, visible, requested
):
    settings.SAGEPORT_GPU_DEVICE_MODE = mode
    make_node(gpus=4)
    deployment = make_deployment(instance_type)
    model = deployment.snapshot["Models"]["model"]
    model["PrimaryContainer"]["Environment"] = {"NVIDIA_VISIBLE_DEVICES": "all"}
    assert add(deployment)
    spec = hosting_containers.spec_for(deployment.endpoint, deployment, deployment.containers.get())
    assert (spec.environment["NVIDIA_VISIBLE_DEVICES"], spec.gpu_device_ids) == (visible, requested)
