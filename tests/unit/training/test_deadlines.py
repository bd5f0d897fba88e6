"""No phase of a training job lasts forever: the reconciler's steps driven against the database,
with an engine that holds nothing (or does not answer) and phases that began long ago."""
from datetime import timedelta

import pytest
from django.utils import timezone

from capacity.models import Placement
from runtime.base import RuntimeUnavailable
from runtime.fake import FakeRuntime
from tests.unit.training.test_scheduler import make_job, make_node
from training import reconciler as training
from training import scheduler
from training import transitions as t
from training.models import SecondaryStatusTransition, TrainingJob

pytestmark = pytest.mark.django_db(transaction=True)

LONG_AGO = timedelta(hours=3)



class _SilentEngine:
    """An engine that never answers."""

    def __getattr__(self, operation):
        def unreachable(*args, **kwargs):
            raise RuntimeUnavailable("The Docker engine cannot be reached: timed out")

        return unreachable


@pytest.fixture(autouse=True)
def short_deadlines(settings):
    settings.SAGEPORT_STARTING_TIMEOUT_SECONDS = 60
    settings.SAGEPORT_DOWNLOADING_TIMEOUT_SECONDS = 120
    settings.SAGEPORT_UPLOADING_TIMEOUT_SECONDS = 180
    settings.SAGEPORT_STOP_GRACE_SECONDS = 20


@pytest.fixture
def engine(monkeypatch):
    def use(runtime):
        monkeypatch.setattr(training, "get_runtime", lambda: runtime)

    use(FakeRuntime())  # an engine holding none of the job's containers or networks
    return use


def cpu_job(**request) -> TrainingJob:
    return make_job(
        "ml.m5.large",
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
        OutputDataConfig={"S3OutputPath": "s3://bucket/out"},
        **request,
    )


def job_in(*path: tuple[str, str], began_ago: timedelta = LONG_AGO, **request) -> TrainingJob:
    """A job moved through `path` whose current phase began `began_ago`."""
    job = cpu_job(**request)
    for state in path:
        assert t.transition(job, state)
    SecondaryStatusTransition.objects.filter(job=job, end_time__isnull=True).update(
        start_time=timezone.now() - began_ago
    )
    return job


def reconciled(job: TrainingJob) -> TrainingJob:
    training.reconcile(job.pk)
    return TrainingJob.objects.get(pk=job.pk)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ((t.DOWNLOADING,), "Downloading input data did not finish within 120 seconds."),
        (
            (t.DOWNLOADING, t.TRAINING, t.UPLOADING),
            "Uploading the training artifacts did not finish within 180 seconds.",
        ),
        (
            (t.DOWNLOADING, t.TRAINING, t.RESTARTING),
            "Restarting the training job did not finish within 180 seconds.",
        ),
        # The grace period (20 s) before SIGKILL, then the upload (180 s).
        (
            (t.DOWNLOADING, t.TRAINING, t.STOPPING_STATE),
            "Stopping the training job did not finish within 200 seconds.",
        ),
    ],
)
def test_a_phase_past_its_deadline_fails_the_job_naming_the_phase(engine, path, reason):
    engine(_SilentEngine())  # whatever keeps it there: here, an engine that never answers

    job = reconciled(job_in(*path))

    assert (job.training_job_status, job.secondary_status) == ("Failed", "Failed")
    assert job.failure_reason == f"InternalServerError: {reason}"
    assert job.training_end_time is not None


def test_a_phase_within_its_deadline_carries_on(engine):
    job = reconciled(job_in(t.DOWNLOADING, began_ago=timedelta(seconds=100)))  # no channels to stage

    assert t.state_of(job) == t.TRAINING


def test_waiting_for_capacity_never_times_out(engine):
    job = job_in(t.PENDING, began_ago=timedelta(days=2))  # no node has registered: nothing fits yet

    job = reconciled(job)

    assert t.state_of(job) == t.PENDING
    assert job.failure_reason == ""


def test_the_start_work_is_timed_from_when_the_job_got_capacity(engine):
    make_node()
    job = job_in(t.PENDING, began_ago=timedelta(days=2))
    assert isinstance(scheduler.place(job), scheduler.Placed)
    Placement.objects.filter(job=job).update(placed_at=timezone.now() - timedelta(seconds=61))

    job = reconciled(job)

    assert job.failure_reason == (
        "InternalServerError: Preparing the instances for training did not finish within 60 seconds."
    )
    assert not Placement.objects.filter(job=job).exists()  # its capacity is free again


def test_max_runtime_stops_the_job_even_when_the_engine_does_not_answer(engine):
    engine(_SilentEngine())
    job = job_in(t.DOWNLOADING, t.TRAINING)
    TrainingJob.objects.filter(pk=job.pk).update(training_start_time=timezone.now() - timedelta(seconds=3601))

    job = reconciled(job)

    assert t.state_of(job) == t.STOPPING_STATE
    assert job.outcome == "MaxRuntimeExceeded"


@pytest.mark.parametrize("name", [".", ".."])
def test_a_stored_channel_name_that_cannot_be_a_directory_fails_the_job_instead_of_looping(engine, name):
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bucket/train"}}
    channel = {"ChannelName": name, "InputMode": "File", "DataSource": source}
    job = job_in(t.DOWNLOADING, began_ago=timedelta(seconds=1), InputDataConfig=[channel])

    job = reconciled(job)

    assert (job.training_job_status, job.failure_reason) == (
        "Failed",
        f"ClientError: channel name '{name}' cannot be a directory name.",
    )
