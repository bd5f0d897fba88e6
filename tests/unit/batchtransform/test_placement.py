"""Where a transform job's instances run and the GPUs they hold: every instance on one node with
the instance type's GPUs of its own (never shared with a training job's), a job that must wait
for GPUs left InProgress and looked at again, one no node can hold failed with SageMaker's
`ResourceLimitExceeded`, and everything given back when the job ends or its node is lost.

SageMaker runs transform jobs on accelerated types (botocore's TransformInstanceType lists
ml.g4dn, ml.p3, ml.g5 ...), and a request beyond what can be provisioned is answered with
ResourceLimitExceeded; training and processing here answer the same way."""

import pytest
from django.utils import timezone

from batchtransform import placement, runner, tasks
from batchtransform.models import TransformJob
from capacity import single_node
from capacity.gpus import gpu_ids, release_pending
from capacity.models import GpuAllocation, Node, Placement
from runtime.fake import FakeRuntime
from tests.unit.training.test_scheduler import make_job as make_training_job
from tests.unit.training.test_scheduler import make_node
from training import scheduler

pytestmark = pytest.mark.django_db(transaction=True)

_created = 0


def make_job(instance_type="ml.g4dn.xlarge", count=1) -> TransformJob:
    global _created
    _created += 1
    name = f"transform-{_created}"
    now = timezone.now()
    return TransformJob.objects.create(
        account_id="123456789012", region="us-east-1", transform_job_name=name,
        transform_job_arn=f"arn:aws:sagemaker:us-east-1:123456789012:transform-job/{name}",
        request={"TransformResources": {"InstanceType": instance_type, "InstanceCount": count}},
        model={"PrimaryContainer": {"Image": "serve:latest"}},
        creation_time=now, last_modified_time=now, next_check_at=now,
    )


@pytest.fixture
def engine(monkeypatch) -> FakeRuntime:
    fake = FakeRuntime()
    monkeypatch.setattr(runner, "get_runtime", lambda: fake)
    return fake


def test_instances_go_on_one_node_each_with_its_own_gpus(settings):
    make_node(settings.SAGEPORT_NODE_NAME, gpus=4)
    job = make_job("ml.g4dn.xlarge", count=2)  # one GPU each

    assert placement.place(job) == single_node.Placed(settings.SAGEPORT_NODE_NAME)

    held = [gpu_ids(placement.placement_of(job, host)) for host in ("algo-1", "algo-2")]
    assert sorted(held) == [("0",), ("1",)]


def test_a_cpu_type_holds_no_gpu(settings):
    make_node(settings.SAGEPORT_NODE_NAME, gpus=1)
    job = make_job("ml.m5.large")

    placement.place(job)

    assert gpu_ids(placement.placement_of(job, "algo-1")) == ()


def test_gpus_a_training_job_holds_make_a_transform_job_wait(settings):
    make_node(settings.SAGEPORT_NODE_NAME, gpus=1)
    assert isinstance(scheduler.place(make_training_job("ml.p3.2xlarge")), scheduler.Placed)

    decision = placement.place(make_job("ml.g4dn.xlarge"))

    assert decision == single_node.Waiting(
        "Waiting for capacity: ml.g4dn.xlarge x 1 does not fit on any node now."
    )


def test_a_waiting_job_stays_in_progress_and_is_looked_at_again_at_the_next_poll(settings, engine):
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = 0.5
    make_node(settings.SAGEPORT_NODE_NAME, gpus=1)
    scheduler.place(make_training_job("ml.p3.2xlarge"))
    job = make_job("ml.g4dn.xlarge")

    assert runner.reconcile(job.pk) == 0.5

    job.refresh_from_db()
    assert job.transform_job_status == "InProgress"
    assert not Placement.objects.filter(transform_job=job).exists()


def test_a_job_no_node_can_ever_hold_fails_with_resource_limit_exceeded(settings, engine):
    make_node(settings.SAGEPORT_NODE_NAME, gpus=4)
    job = make_job("ml.p3.16xlarge")  # 8 GPUs

    assert runner.reconcile(job.pk) is None

    job.refresh_from_db()
    assert job.transform_job_status == "Failed"
    assert job.failure_reason == (
        "ResourceLimitExceeded: ml.p3.16xlarge x 1 needs 8 NVIDIA GPUs on one node, "
        "and no node has that many."
    )


def test_a_job_placed_on_another_node_is_handed_to_that_node(settings, engine):
    make_node("node-b", gpus=1)
    make_node(settings.SAGEPORT_NODE_NAME, gpus=0)
    job = make_job("ml.g4dn.xlarge")

    assert runner.reconcile(job.pk) == 0.0  # tasks.enqueue routes it to node-b's queue

    assert placement.node_of(job.pk) == "node-b"
    assert TransformJob.objects.get(pk=job.pk).transform_job_status == "InProgress"


def test_an_ended_job_gives_its_gpus_back(settings, engine):
    make_node(settings.SAGEPORT_NODE_NAME, gpus=1)
    job = make_job("ml.g4dn.xlarge")
    placement.place(job)

    runner._end(job, "Stopped")

    assert not GpuAllocation.objects.exists()
    assert TransformJob.objects.get(pk=job.pk).transform_job_status == "Stopped"


def test_the_sweeper_frees_what_ended_jobs_and_jobs_on_lost_nodes_hold(monkeypatch):
    monkeypatch.setattr(tasks, "get_runtime", lambda: FakeRuntime())
    monkeypatch.setattr(tasks, "enqueue", lambda *args: None)
    make_node("node-a", gpus=1)
    make_node("node-b", gpus=1)
    ended = make_job("ml.g4dn.xlarge")
    assert placement.place(ended) == single_node.Placed("node-a")
    TransformJob.objects.filter(pk=ended.pk).update(transform_job_status="Completed")
    assert release_pending("node-a")  # hosting waits for these GPUs rather than failing
    stranded = make_job("ml.g4dn.xlarge")
    assert placement.place(stranded) == single_node.Placed("node-b")
    Node.objects.filter(name="node-b").update(lost_at=timezone.now())

    tasks.sweep_transform()

    assert not Placement.objects.exists()
    assert TransformJob.objects.get(pk=stranded.pk).transform_job_status == "InProgress"
