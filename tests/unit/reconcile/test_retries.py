"""What the reconcile loop does with a failing step: transient errors are retried with backoff and
bounded, permanent ones fail the resource at once, a bug is retried a few times and then fails the
resource visibly. Driven against the database with a step that raises."""
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts import buckets
from reconcile import loop as reconcile
from runtime.base import ContainerStartFailed, RuntimeError_, RuntimeUnavailable
from runtime.fake import FakeRuntime
from storage.archives import ArchiveError
from storage.s3 import StorageError
from tests.unit.training.test_scheduler import make_job
from training import reconciler as training
from training import transitions as t
from training.models import TrainingJob

pytestmark = pytest.mark.django_db(transaction=True)



@pytest.fixture(autouse=True)
def empty_engine(monkeypatch, settings):
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = 0.5
    monkeypatch.setattr(training, "get_runtime", lambda: FakeRuntime())


def downloading_job(**request) -> TrainingJob:
    job = make_job(
        "ml.m5.large",
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
        OutputDataConfig={"S3OutputPath": "s3://bucket/out"},
        **request,
    )
    buckets.claim("bucket", job.account_id)  # the job's own bucket (accounts/s3_tenancy)
    assert t.transition(job, t.DOWNLOADING)
    return job


def failing_with(monkeypatch, error: Exception) -> None:
    def step(job, token):
        raise error

    monkeypatch.setitem(training.STEPS, t.DOWNLOADING, step)


def look(job: TrainingJob) -> tuple[float | None, TrainingJob]:
    """One reconcile, as the message that is due now would run it."""
    TrainingJob.objects.filter(pk=job.pk).update(next_check_at=None)
    delay = training.reconcile(job.pk)
    return delay, TrainingJob.objects.get(pk=job.pk)


@pytest.mark.parametrize(
    "error",
    [
        StorageError("Could not read s3://bucket/train: SlowDown", transient=True),
        RuntimeUnavailable("The Docker engine cannot be reached"),
        RuntimeError_('Could not remove network "n": network has active endpoints'),
    ],
)
def test_a_transient_error_is_retried_with_growing_pauses_then_fails_the_job(monkeypatch, settings, error):
    failing_with(monkeypatch, error)
    job = downloading_job()

    delays = []
    for _ in range(settings.SAGEPORT_TRANSIENT_RETRY_ATTEMPTS - 1):
        delay, job = look(job)
        delays.append(delay)
        assert t.state_of(job) == t.DOWNLOADING
    assert delays[:4] == [0.5, 1.0, 2.0, 4.0]
    assert max(delays) == reconcile.MAX_BACKOFF_SECONDS
    assert job.failed_attempts == settings.SAGEPORT_TRANSIENT_RETRY_ATTEMPTS - 1

    delay, job = look(job)

    assert (delay, job.training_job_status) == (None, "Failed")
    assert job.failure_reason == f"InternalServerError: {error}"


def test_the_attempts_survive_a_worker_restart_and_a_success_clears_them(monkeypatch):
    failing_with(monkeypatch, RuntimeUnavailable("The Docker engine cannot be reached"))
    job = downloading_job()
    look(job)
    _, job = look(job)
    assert job.failed_attempts == 2  # on the row: a new worker process reads the same count

    monkeypatch.setitem(training.STEPS, t.DOWNLOADING, lambda job, token: 5.0)
    delay, job = look(job)

    assert (delay, job.failed_attempts) == (5.0, 0)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ArchiveError("model/x is a FIFO"), "ClientError: model/x is a FIFO"),
        (StorageError("Could not write s3://bucket/out: AccessDenied"), "ClientError: Could not write"),
        (ContainerStartFailed("no such device"), "InternalServerError: no such device"),
    ],
)
def test_a_permanent_error_fails_the_job_at_once_with_its_reason(monkeypatch, error, reason):
    failing_with(monkeypatch, error)

    delay, job = look(downloading_job())

    assert (delay, job.training_job_status) == (None, "Failed")
    assert job.failure_reason.startswith(reason)


def test_a_bug_is_retried_a_few_times_then_fails_the_job_without_a_traceback(monkeypatch):
    failing_with(monkeypatch, KeyError("ResourceConfig"))
    job = downloading_job()

    for _ in range(reconcile.BUG_ATTEMPTS - 1):
        _, job = look(job)
        assert t.state_of(job) == t.DOWNLOADING
    delay, job = look(job)

    assert (delay, job.training_job_status) == (None, "Failed")
    assert job.failure_reason == (
        "InternalServerError: an internal error stopped the work (KeyError: 'ResourceConfig')"
    )
    assert "Traceback" not in job.failure_reason
    assert job.training_end_time is not None


def test_a_transient_storage_error_while_staging_input_is_retried_not_fatal(monkeypatch):
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bucket/train"}}
    channel = {"ChannelName": "train", "InputMode": "File", "DataSource": source}
    job = downloading_job(InputDataConfig=[channel])
    outage = StorageError("Could not list s3://bucket/train: ServiceUnavailable", transient=True)

    def unreachable(*args):
        raise outage

    monkeypatch.setattr(training, "stage_channel", unreachable)

    delay, job = look(job)

    assert (t.state_of(job), job.failure_reason, delay) == (t.DOWNLOADING, "", 0.5)


def test_an_archive_error_while_uploading_fails_the_job_instead_of_looping(monkeypatch):
    job = downloading_job()
    assert t.transition(job, t.TRAINING)
    assert t.transition(job, t.UPLOADING, outcome="Completed")

    def unpackable(job, hosts):
        raise ArchiveError("/opt/ml/model/pipe is not a regular file or directory")

    monkeypatch.setattr(training.artifacts, "upload", unpackable)

    delay, job = look(job)

    assert (delay, job.training_job_status) == (None, "Failed")
    assert job.failure_reason == "ClientError: /opt/ml/model/pipe is not a regular file or directory"


def test_a_phase_deadline_still_ends_transient_retries_early(monkeypatch, settings):
    settings.SAGEPORT_DOWNLOADING_TIMEOUT_SECONDS = 60
    failing_with(monkeypatch, RuntimeUnavailable("The Docker engine cannot be reached"))
    job = downloading_job()
    job.transitions.filter(end_time__isnull=True).update(start_time=timezone.now() - timedelta(seconds=61))

    _, job = look(job)

    assert job.failure_reason == (
        "InternalServerError: Downloading input data did not finish within 60 seconds."
    )
