"""Where a processing job's instances run: all on one node, GPUs exclusive with training's, clear
waits and refusals; and what losing that node does to the job."""
from django.utils import timezone

from capacity import single_node
from capacity.gpus import gpu_ids
from capacity.models import Placement
from processing import placement, reconciler, tasks
from processing import transitions as t
from processing.models import ProcessingJob
from tests.unit.training.test_scheduler import make_job as make_training_job
from tests.unit.training.test_scheduler import make_node
from training import scheduler

_created = 0


def make_job(instance_type="ml.p3.2xlarge", count=1) -> ProcessingJob:
    global _created
    _created += 1
    name = f"proc-{_created}"
    now = timezone.now()
    return ProcessingJob.objects.create(
        account_id="123456789012", region="us-east-1", processing_job_name=name,
        processing_job_arn=f"arn:aws:sagemaker:us-east-1:123456789012:processing-job/{name}",
        request={
            "AppSpecification": {"ImageUri": "prep:latest"},
            "ProcessingResources": {"ClusterConfig": {"InstanceType": instance_type, "InstanceCount": count}},
        },
        creation_time=now, last_modified_time=now,
    )


def test_every_instance_goes_on_one_node_with_gpus_of_its_own(db):
    make_node("node-a", gpus=4)
    job = make_job("ml.p3.2xlarge", count=2)  # one GPU each

    assert placement.place(job) == single_node.Placed("node-a")

    held = [gpu_ids(placement.placement_of(job, host)) for host in ("algo-1", "algo-2")]
    assert len(set(held)) == 2 and all(len(ids) == 1 for ids in held)


def test_gpus_a_training_job_holds_are_not_given_to_a_processing_job(db):
    make_node("node-a", gpus=1)
    assert isinstance(scheduler.place(make_training_job("ml.p3.2xlarge")), scheduler.Placed)

    decision = placement.place(make_job("ml.p3.2xlarge"))

    assert isinstance(decision, single_node.Waiting)
    assert "does not fit on any node now" in decision.reason


def test_a_job_no_node_could_ever_hold_fails_at_once(db):
    make_node("node-a", gpus=4)

    decision = placement.place(make_job("ml.p3.16xlarge"))  # 8 GPUs

    assert isinstance(decision, single_node.NeverFits)
    assert decision.reason.startswith("ResourceLimitExceeded: ml.p3.16xlarge x 1 needs 8 NVIDIA GPUs")


def test_a_lost_node_fails_a_running_job_and_frees_what_it_held(db):
    make_node("node-a", gpus=1)
    job = make_job()
    placement.place(job)
    assert t.transition(job, t.DOWNLOADING) and t.transition(job, t.PROCESSING)

    reconciler.on_node_lost(job, "node-a")

    job.refresh_from_db()
    assert job.processing_job_status == "Failed"
    assert job.failure_reason == (
        "InternalServerError: the node node-a that ran it stopped sending heartbeats."
    )
    assert not Placement.objects.filter(processing_job=job).exists()


def test_a_lost_node_fails_the_job_once_naming_it_whichever_worker_sweeps_first(db, monkeypatch):
    """Sweeps overlap: one that finds the placements already released by another leaves the job
    to it, and the failure names the node."""
    node = make_node("node-a", gpus=1)
    job = make_job()
    placement.place(job)
    assert t.transition(job, t.DOWNLOADING) and t.transition(job, t.PROCESSING)
    node.lost_at = timezone.now()
    node.save(update_fields=["lost_at"])
    monkeypatch.setattr(tasks.reconcile_processing_job, "delay", lambda job_id: None)
    midway = list(Placement.objects.filter(processing_job=job))
    Placement.objects.filter(processing_job=job).delete()  # the first sweeper, before its transition

    assert not tasks._move_off_lost_node(job.pk)
    job.refresh_from_db()
    assert job.processing_job_status == "InProgress"
    for row in midway:
        row.save(force_insert=True)
    assert tasks._move_off_lost_node(job.pk)

    job.refresh_from_db()
    assert job.failure_reason == (
        "InternalServerError: the node node-a that ran it stopped sending heartbeats."
    )
