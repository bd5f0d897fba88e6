"""The processing reconciler driven one step at a time through the fake runtime (no Docker, no
S3): the container as SageMaker runs it ("How Amazon SageMaker Processing Runs Your Processing
Container Image"), ExitMessage from /opt/ml/output/message, a failed instance stopping the
others, a stop before any container started."""
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import sidecars
from jobs.identity import container_name
from processing import kind, pipes, reconciler, services, workspace
from processing import transitions as t
from processing.models import ProcessingJob
from processing.presenters import describe_processing_job
from processing.requests import with_defaults
from runtime.fake import FakeRuntime
from tests.unit.training.test_scheduler import make_node

pytestmark = pytest.mark.django_db(transaction=True)

IMAGE = "prep:latest"


@pytest.fixture(autouse=True)
def timings(settings, tmp_path):
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = 0.5
    settings.SAGEPORT_STOP_GRACE_SECONDS = 30
    settings.SAGEPORT_PULL_MISSING_IMAGES = False
    settings.DATA_DIR = str(tmp_path)
    make_node(name=settings.SAGEPORT_NODE_NAME, gpus=0, cpus=4, memory_gib=16)


@pytest.fixture
def engine(monkeypatch) -> FakeRuntime:
    fake = FakeRuntime(images=(IMAGE,))
    monkeypatch.setattr(reconciler, "get_runtime", lambda: fake)
    return fake


def new_job(count: int = 1, **request) -> ProcessingJob:
    now = timezone.now()
    stored = with_defaults({
        "ProcessingJobName": "prep",
        "AppSpecification": {"ImageUri": IMAGE},
        "RoleArn": "arn:aws:iam::123456789012:role/r",
        "ProcessingResources": {"ClusterConfig": {"InstanceType": "ml.m5.large", "InstanceCount": count}},
        **request,
    })
    return ProcessingJob.objects.create(
        account_id="123456789012", region="us-east-1", processing_job_name="prep",
        processing_job_arn="arn:aws:sagemaker:us-east-1:123456789012:processing-job/prep",
        request=stored, creation_time=now, last_modified_time=now,
    )


def step(job: ProcessingJob) -> float | None:
    ProcessingJob.objects.filter(pk=job.pk).update(next_check_at=None)
    delay = reconciler.reconcile(job.pk)
    job.refresh_from_db()
    return delay


def until_processing(job: ProcessingJob) -> None:
    for state in (t.DOWNLOADING, t.PROCESSING):
        step(job)
        assert t.state_of(job) == state
    assert step(job) == 0.5  # the containers started


def name_of(job: ProcessingJob, host: str = "algo-1") -> str:
    return container_name(kind.identity(job), host)


def test_the_container_runs_as_sagemaker_runs_it_and_its_message_becomes_the_exit_message(engine):
    job = new_job(
        AppSpecification={"ImageUri": IMAGE, "ContainerEntrypoint": ["python3", "/code/prep.py"],
                          "ContainerArguments": ["--rows", "10"]},
        Environment={"MODE": "fast"},
    )
    until_processing(job)
    spec = engine.containers[name_of(job)].spec
    assert (spec.entrypoint, spec.command) == (["python3", "/code/prep.py"], ["--rows", "10"])
    assert spec.environment["MODE"] == "fast"
    mounts = {mount.container_path: mount.read_only for mount in spec.mounts}
    assert mounts["/opt/ml/config"] is True and mounts["/opt/ml/output"] is False

    host = workspace.host_workspace(job, "algo-1")
    (host.output_dir / "message").write_text("10 rows written")
    engine.exit(name_of(job), 0)
    step(job)
    assert t.state_of(job) == t.UPLOADING
    assert step(job) is None

    described = describe_processing_job(job)
    assert (described["ProcessingJobStatus"], described["ExitMessage"]) == ("Completed", "10 rows written")
    assert name_of(job) not in engine.containers  # removed at the end


def test_one_failed_instance_stops_the_others_and_fails_the_job(engine):
    job = new_job(count=2)
    until_processing(job)
    engine.exit(name_of(job, "algo-2"), 2)

    step(job)
    assert t.state_of(job) == t.STOPPING
    step(job)  # SIGTERM to algo-1
    engine.exit(name_of(job, "algo-1"), 143)
    assert step(job) is None

    assert job.processing_job_status == "Failed"
    assert job.failure_reason == "AlgorithmError: See job logs for more information"


def test_a_stop_before_any_container_started_ends_stopped_with_nothing_left(engine):
    job = new_job()
    step(job)
    assert t.state_of(job) == t.DOWNLOADING
    services.transitions.transition(job, t.STOPPING)

    assert step(job) is None

    assert job.processing_job_status == "Stopped" and not engine.containers
    assert not workspace.host_workspace(job, "algo-1").root.exists()


def test_pipe_inputs_get_a_feeder_per_host_and_their_fifo_directory_mounted(engine, monkeypatch):
    """S3InputMode Pipe: no File staging; each host's feeder writes `<LocalPath>_<epoch>` into a
    directory mounted beside LocalPath, inflating Gzip objects (processing/pipes.py)."""
    shares = {0: [("b", "in/a")], 1: [("b", "in/b")]}  # ShardedByS3Key: one object each
    monkeypatch.setattr(pipes.staging, "host_objects", lambda account, source, index, count: shares[index])
    monkeypatch.setattr(pipes.sidecars, "ensure_all", lambda directory: None)  # no helper processes
    source = {"S3Uri": "s3://b/in", "S3DataType": "S3Prefix", "S3DataDistributionType": "ShardedByS3Key"}
    job = new_job(count=2, ProcessingInputs=[{
        "InputName": "rows",
        "S3Input": {**source, "LocalPath": "/opt/ml/processing/input/rows", "S3InputMode": "Pipe",
                    "S3CompressionType": "Gzip"},
    }])

    until_processing(job)

    for index, host in enumerate(("algo-1", "algo-2")):
        fifo_dir = workspace.host_workspace(job, host).pipe_dir(0)
        mounts = {m.container_path: m.host_path for m in engine.containers[name_of(job, host)].spec.mounts}
        assert mounts["/opt/ml/processing/input"] == str(fifo_dir)
        assert "/opt/ml/processing/input/rows" not in mounts
        spec = sidecars.spec_of(pipes.directory(job), f"pipe-{host}-0")
        assert (spec["fifo_dir"], spec["container_dir"], spec["channel"]) == (
            str(fifo_dir), "/opt/ml/processing/input", "rows"
        )
        assert spec["gunzip"] and spec["objects"] == [list(item) for item in shares[index]]


def test_a_container_ignoring_sigterm_is_killed_after_the_grace_and_the_job_says_so(engine, settings):
    settings.SAGEPORT_FAILURE_STOP_GRACE_SECONDS = 10
    job = new_job(count=2)
    until_processing(job)
    engine.containers[name_of(job, "algo-1")].ignores_sigterm = True
    engine.exit(name_of(job, "algo-2"), 2)
    step(job)
    step(job)  # SIGTERM to algo-1, which goes on
    assert ProcessingJob.objects.get(pk=job.pk).stop_killed_at is None

    ProcessingJob.objects.filter(pk=job.pk).update(stop_signalled_at=timezone.now() - timedelta(seconds=11))
    step(job)
    assert engine.containers[name_of(job, "algo-1")].signals == ["SIGTERM", "SIGKILL"]
    assert ProcessingJob.objects.get(pk=job.pk).stop_killed_at is not None


@pytest.mark.parametrize("refusal, blame", [("faulting", "InternalServerError"), ("refused", "ClientError")])
def test_a_container_the_engine_cannot_start_fails_the_job_blaming_the_engine_or_the_spec(
    engine, refusal, blame
):
    """An engine's fault of its own (its 5xx) is the platform's; its refusal of the spec the job's."""
    job = new_job()
    getattr(engine, refusal)[name_of(job)] = "why"
    for _ in range(6):
        step(job)

    assert job.processing_job_status == "Failed"
    assert job.failure_reason.startswith(f"{blame}: could not start the container for algo-1: ")
