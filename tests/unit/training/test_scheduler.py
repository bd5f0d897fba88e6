"""The scheduler: GPUs exclusive, first come first served, clear waits
and refusals, and what a placed instance's container is given."""

import pytest
from django.db import IntegrityError
from django.utils import timezone

from capacity.gpus import gpu_ids
from capacity.models import GpuAllocation, Node
from runtime import labels
from training import containers, scheduler
from training.models import TrainingJob

GIB = 1024 * 1024 * 1024


def make_node(name="node-a", gpus=4, cpus=2, memory_gib=8, lost=False) -> Node:
    now = timezone.now()
    return Node.objects.create(
        name=name, cpus=cpus, memory_bytes=memory_gib * GIB, gpus=[{"id": str(i)} for i in range(gpus)],
        registered_at=now, heartbeat_at=now, lost_at=now if lost else None,
    )


_created = 0


def make_job(instance_type="ml.p3.2xlarge", count=1, **request) -> TrainingJob:
    global _created
    _created += 1
    name = f"job-{_created}"
    now = timezone.now()
    return TrainingJob.objects.create(
        account_id="123456789012", region="us-east-1", training_job_name=name,
        training_job_arn=f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}",
        request={
            "AlgorithmSpecification": {"TrainingImage": "algo:latest", "TrainingInputMode": "File"},
            "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": count},
            "EnableNetworkIsolation": False,
            **request,
        },
        creation_time=now, last_modified_time=now,
    )


def finish(job: TrainingJob) -> None:
    finished = {"training_job_status": "Completed", "secondary_status": "Completed"}
    TrainingJob.objects.filter(pk=job.pk).update(**finished)
    scheduler.release(job)


def gpus_of(job: TrainingJob) -> dict[str, tuple[str, ...]]:
    return {host: gpu_ids(scheduler.placement_of(job, host)) for host in containers.hosts(job)}


# --- placement ------------------------------------------------------------------------------


def test_instances_get_distinct_gpus_and_two_jobs_never_share_one(db):
    make_node(gpus=4)
    two_instances = make_job("ml.p3.2xlarge", count=2)
    four_gpus = make_job("ml.g5.12xlarge")
    one_gpu = make_job("ml.p3.2xlarge")

    assert scheduler.place(two_instances) == scheduler.Placed("node-a")
    assert gpus_of(two_instances) == {"algo-1": ("0",), "algo-2": ("1",)}
    waiting = scheduler.place(four_gpus)
    assert isinstance(waiting, scheduler.Waiting)
    assert "needs 4 NVIDIA GPUs" in waiting.reason and "node-a: 2 of 4" in waiting.reason

    finish(two_instances)
    assert scheduler.place(four_gpus) == scheduler.Placed("node-a")
    assert gpus_of(four_gpus) == {"algo-1": ("0", "1", "2", "3")}
    assert isinstance(scheduler.place(one_gpu), scheduler.Waiting)


def test_an_older_waiting_job_is_not_overtaken_by_a_newer_one_that_fits(db):
    make_node(gpus=4)
    running = make_job("ml.p3.8xlarge")  # 4 GPUs
    big = make_job("ml.g5.12xlarge")  # 4 GPUs, must wait
    small = make_job("ml.p3.2xlarge")  # 1 GPU
    cpu_only = make_job("ml.m5.large")
    assert scheduler.place(running) == scheduler.Placed("node-a")
    finish(running)
    make_job("ml.p3.2xlarge", count=3)  # newer still: irrelevant to the order of the two above

    first = scheduler.place(small)
    assert isinstance(first, scheduler.Waiting) and "1 older job is waiting first" in first.reason
    assert scheduler.place(cpu_only) == scheduler.Placed("node-a")  # competes for no GPU
    assert scheduler.place(big) == scheduler.Placed("node-a")
    assert isinstance(scheduler.place(small), scheduler.Waiting)


def test_a_job_larger_than_every_node_never_fits(db):
    make_node(gpus=4)
    make_node("node-b", gpus=8, lost=True)  # lost nodes still count: they are expected back
    verdict = scheduler.place(make_job("ml.p2.16xlarge"))
    assert isinstance(verdict, scheduler.NeverFits)
    assert verdict.reason.startswith("ResourceLimitExceeded: ml.p2.16xlarge x 1 needs 16 NVIDIA GPUs")
    assert "node-b, has 8 GPUs" in verdict.reason

    eight = scheduler.place(make_job("ml.p3.16xlarge"))
    assert isinstance(eight, scheduler.Waiting)  # only the lost node-b could hold it


def test_non_nvidia_accelerators_never_fit(db):
    make_node(gpus=16)
    verdict = scheduler.place(make_job("ml.trn1.32xlarge"))
    assert isinstance(verdict, scheduler.NeverFits)
    assert "16 AWS Trainium devices" in verdict.reason and "NVIDIA GPUs only" in verdict.reason


def test_without_any_registered_node_a_job_waits(db):
    verdict = scheduler.place(make_job("ml.m5.large"))
    assert verdict == scheduler.Waiting("Waiting for a worker node to register its capacity.")


def test_cpu_and_memory_are_shared_limits_capped_at_the_node_unless_strict(db, settings):
    make_node(gpus=0, cpus=2, memory_gib=8)
    first, second = make_job("ml.m5.4xlarge"), make_job("ml.m5.4xlarge")  # 16 vCPUs, 64 GiB each
    assert scheduler.place(first) == scheduler.Placed("node-a")
    assert scheduler.place(second) == scheduler.Placed("node-a")
    placement = scheduler.placement_of(first, "algo-1")
    assert (placement.nano_cpus, placement.memory_bytes) == (2_000_000_000, 8 * GIB)

    settings.SAGEPORT_STRICT_CPU_MEMORY = True
    verdict = scheduler.place(make_job("ml.m5.4xlarge"))
    assert isinstance(verdict, scheduler.NeverFits) and "16 vCPUs" in verdict.reason


def test_strict_cpu_and_memory_are_reserved(db, settings):
    settings.SAGEPORT_STRICT_CPU_MEMORY = True
    make_node(gpus=0, cpus=4, memory_gib=16)
    first, second = make_job("ml.m5.large"), make_job("ml.m5.xlarge")  # 2 + 4 vCPUs
    assert scheduler.place(first) == scheduler.Placed("node-a")
    assert isinstance(scheduler.place(second), scheduler.Waiting)
    finish(first)
    assert scheduler.place(second) == scheduler.Placed("node-a")


def test_a_gpu_cannot_be_booked_twice_even_by_racing_schedulers(db):
    node = make_node(gpus=1)
    job = make_job("ml.p3.2xlarge")
    assert scheduler.place(job) == scheduler.Placed("node-a")
    other = scheduler.placement_of(job, "algo-1")
    with pytest.raises(IntegrityError):
        GpuAllocation.objects.create(placement=other, node=node, device_id="0")


def test_lost_nodes_get_no_new_jobs(db):
    make_node("node-a", gpus=0, lost=True)
    verdict = scheduler.place(make_job("ml.m5.large"))
    assert isinstance(verdict, scheduler.Waiting) and "no worker node is alive" in verdict.reason


# --- what the container gets --------------------------------------------------------------


def test_the_container_gets_exactly_its_gpus_as_a_device_request(db, settings):
    settings.SAGEPORT_GPU_DEVICE_MODE = "device-request"
    make_node(gpus=4)
    scheduler.place(make_job("ml.p3.2xlarge"))
    job = make_job("ml.p3.2xlarge", count=2, Environment={"NVIDIA_VISIBLE_DEVICES": "all"})
    scheduler.place(job)
    spec = containers.spec_for(job, "algo-2")
    assert spec.gpu_device_ids == ("2",)
    assert spec.environment["NVIDIA_VISIBLE_DEVICES"] == "2"  # the job cannot widen it
    assert spec.labels[labels.NODE] == "node-a"


def test_env_only_mode_selects_gpus_by_the_variable_alone(db, settings):
    settings.SAGEPORT_GPU_DEVICE_MODE = "env-only"
    make_node(gpus=4)
    job = make_job("ml.g5.12xlarge")
    scheduler.place(job)
    spec = containers.spec_for(job, "algo-1")
    assert (spec.gpu_device_ids, spec.environment["NVIDIA_VISIBLE_DEVICES"]) == ((), "0,1,2,3")


def test_a_cpu_instance_gets_no_gpu_at_all(db, settings):
    settings.SAGEPORT_GPU_DEVICE_MODE = "device-request"
    make_node(gpus=4)
    job = make_job("ml.m5.large")
    scheduler.place(job)
    spec = containers.spec_for(job, "algo-1")
    assert (spec.gpu_device_ids, spec.environment["NVIDIA_VISIBLE_DEVICES"]) == ((), "void")
