"""The training reconciler driven one step at a time through the fake runtime and an in-memory
object store: no Docker, no S3. Each test plays the engine's part (a container prints, exits,
ignores SIGTERM, vanishes) between steps and checks what the user would see: the job's status,
its FailureReason, its logs, its artifacts, and what is left on the engine."""

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY

from accounts.accesskeys import create_access_key
from accounts.models import AccessKey, ContainerGrant
from gateway.network import SERVICES_NETWORK
from logs import store as log_store
from runtime import labels
from runtime.base import RuntimeError_
from runtime.fake import SIGKILL_EXIT_CODE, FakeRuntime
from tests.unit.fake_storage import FakeStore
from tests.unit.training.test_scheduler import make_job, make_node
from training import containers, reaper, workspace
from training import reconciler as training
from training import transitions as t
from training.models import TrainingJob
from training.presenters import describe_training_job
from training.requests import with_defaults

pytestmark = pytest.mark.django_db(transaction=True)

IMAGE = "algo:latest"
OUTPUT = "s3://bucket/out"


@pytest.fixture(autouse=True)
def timings(settings):
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = 0.5
    settings.SAGEPORT_STOP_GRACE_SECONDS = 30
    settings.SAGEPORT_PULL_MISSING_IMAGES = False


@pytest.fixture(autouse=True)
def node(settings):
    return make_node(name=settings.SAGEPORT_NODE_NAME, gpus=0, cpus=4, memory_gib=16)


@pytest.fixture
def engine(monkeypatch) -> FakeRuntime:
    fake = FakeRuntime(images=(IMAGE,))
    monkeypatch.setattr(training, "get_runtime", lambda: fake)
    return fake


@pytest.fixture
def store(monkeypatch) -> FakeStore:
    return FakeStore().install(monkeypatch)


def new_job(**request) -> TrainingJob:
    """A job whose stored request is what CreateTrainingJob would store (defaults filled in)."""
    job = make_job(
        "ml.m5.large",
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
        OutputDataConfig={"S3OutputPath": OUTPUT},
        **request,
    )
    TrainingJob.objects.filter(pk=job.pk).update(request=with_defaults(job.request))
    job.refresh_from_db()
    return job


def step(job: TrainingJob) -> float | None:
    """One reconcile, as the message that is due now would run it; `job` is reloaded."""
    TrainingJob.objects.filter(pk=job.pk).update(next_check_at=None)
    delay = training.reconcile(job.pk)
    job.refresh_from_db()
    return delay


def until_training(job: TrainingJob, engine: FakeRuntime, poll: float = 0.5) -> str:
    """Starting → Downloading → Training → container started; the container's name."""
    for state in (t.DOWNLOADING, t.TRAINING):
        step(job)
        assert t.state_of(job) == state
    assert step(job) == poll
    name = containers.container_name(job, "algo-1")
    assert engine.containers[name].state.running
    return name


def log_messages(job: TrainingJob) -> list[str]:
    stream = containers.training_stream(job, "algo-1")
    return log_store.tail(stream, 100)


def artifact_uri(job: TrainingJob, name: str) -> str:
    return f"{OUTPUT}/{job.training_job_name}/output/{name}"


def test_a_job_goes_from_create_to_completed_with_its_input_logs_and_artifacts(engine, store):
    store.put("s3://bucket/train/part-0.csv", b"1,2\n")
    channel = {
        "ChannelName": "train",
        "InputMode": "File",
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": "s3://bucket/train",
            }
        },
    }
    job = new_job(InputDataConfig=[channel])
    host = workspace.host_workspace(job, "algo-1")

    name = until_training(job, engine)
    assert (host.channel_dir("train") / "part-0.csv").read_bytes() == b"1,2\n"
    spec = engine.containers[name].spec
    assert (spec.labels[labels.RESOURCE], spec.labels[labels.HOST]) == (job.training_job_arn, "algo-1")

    engine.print(name, "epoch 1: loss=0.25")
    (host.model_dir / "model.bin").write_bytes(b"weights")
    assert step(job) == 0.5  # still running: output copied, nothing decided
    assert log_messages(job) == ["epoch 1: loss=0.25"]

    engine.exit(name, 0)
    step(job)
    assert t.state_of(job) == t.UPLOADING
    assert step(job) is None

    assert t.state_of(job) == t.COMPLETED
    assert store.tar_members(artifact_uri(job, "model.tar.gz")) == {"model.bin": b"weights"}
    assert artifact_uri(job, "output.tar.gz").removeprefix("s3://bucket/") in store.keys("bucket")
    # What the job used is removed; the engine-wide services network stays for other jobs.
    assert engine.containers == {} and list(engine.networks) == [SERVICES_NETWORK]
    assert not workspace.job_root(job).exists()


def test_an_algorithm_that_exits_non_zero_fails_the_job_with_its_exit_code_and_output(engine, store):
    job = new_job()
    name = until_training(job, engine)

    engine.print(name, "ValueError: bad hyperparameter", stream="stderr")
    engine.exit(name, 2)
    step(job)
    assert t.state_of(job) == t.UPLOADING  # a failed job's artifacts are uploaded too
    step(job)

    assert t.state_of(job) == t.FAILED
    assert job.failure_reason == (
        "AlgorithmError: the algorithm on algo-1 exited with exit code 2. Last output:\n"
        "ValueError: bad hyperparameter"
    )


def test_a_failure_file_is_framed_as_sagemaker_frames_it_and_cut_to_1024_characters(engine, store):
    job = new_job()
    name = until_training(job, engine)

    failure = workspace.host_workspace(job, "algo-1").output_dir / workspace.FAILURE_FILE
    failure.write_text("ExecuteUserScriptError: " + "x" * 2000)
    engine.exit(name, 1)
    step(job)
    step(job)

    assert t.state_of(job) == t.FAILED
    assert job.failure_reason.startswith("AlgorithmError: ExecuteUserScriptError: xxx")
    assert job.failure_reason.endswith("xxx, exit code: 1")
    assert len(job.failure_reason) == 1024


def test_stop_sends_sigterm_once_then_sigkill_after_the_grace_period(engine, store):
    job = new_job()
    name = until_training(job, engine)
    engine.containers[name].ignores_sigterm = True
    assert t.transition(job, t.STOPPING_STATE)

    step(job)
    step(job)  # within the grace period: nothing more is sent
    assert engine.containers[name].signals == ["SIGTERM"]
    assert engine.containers[name].state.running
    assert TrainingJob.objects.get(pk=job.pk).stop_killed_at is None

    TrainingJob.objects.filter(pk=job.pk).update(stop_signalled_at=timezone.now() - timedelta(seconds=31))
    step(job)
    assert engine.containers[name].signals == ["SIGTERM", "SIGKILL"]
    assert engine.containers[name].state.exit_code == SIGKILL_EXIT_CODE
    assert TrainingJob.objects.get(pk=job.pk).stop_killed_at is not None  # the page says it was killed

    assert step(job) is None
    assert t.state_of(job) == t.STOPPED
    assert artifact_uri(job, "model.tar.gz").removeprefix("s3://bucket/") in store.keys("bucket")
    assert engine.containers == {}


def test_a_failed_instance_ends_the_others_after_the_short_failure_grace(engine, store, settings):
    """The user's stop waits SAGEPORT_STOP_GRACE_SECONDS (30 here; SageMaker's 120 s); the other
    instances of a job that already failed wait only the failure grace, so that one ignoring
    SIGTERM (an MPI job's toolkit as PID 1) does not hold the failure back."""
    settings.SAGEPORT_FAILURE_STOP_GRACE_SECONDS = 10
    job = new_job()
    job.request["ResourceConfig"]["InstanceCount"] = 2
    TrainingJob.objects.filter(pk=job.pk).update(request=job.request)
    step(job)  # Starting → Downloading
    step(job)  # Downloading → Training
    step(job)  # the containers start
    survivor, failing = (containers.container_name(job, host) for host in ("algo-1", "algo-2"))
    engine.containers[survivor].ignores_sigterm = True

    engine.exit(failing, 1)
    step(job)
    assert engine.containers[survivor].signals == ["SIGTERM"]
    TrainingJob.objects.filter(pk=job.pk).update(stop_signalled_at=timezone.now() - timedelta(seconds=11))
    step(job)
    assert engine.containers[survivor].signals == ["SIGTERM", "SIGKILL"]  # 11 s: not the stop's 30
    step(job)
    step(job)

    assert t.state_of(job) == t.FAILED
    assert job.failure_reason.startswith("AlgorithmError: ") and "algo-2" in job.failure_reason


def test_a_job_past_max_runtime_is_stopped_and_ends_max_runtime_exceeded(engine, store):
    job = new_job()
    name = until_training(job, engine)
    TrainingJob.objects.filter(pk=job.pk).update(training_start_time=timezone.now() - timedelta(seconds=3601))

    step(job)
    assert (t.state_of(job), job.outcome) == (t.STOPPING_STATE, "MaxRuntimeExceeded")
    step(job)  # SIGTERM, which this container honours
    assert engine.containers[name].signals == ["SIGTERM"]
    step(job)

    assert t.state_of(job) == t.MAX_RUNTIME_EXCEEDED
    assert job.training_job_status == "Stopped"


def test_a_vanished_container_restarts_the_job_per_retry_strategy_then_fails_it(engine, store):
    job = new_job(RetryStrategy={"MaximumRetryAttempts": 1})
    name = until_training(job, engine)

    engine.vanish(name)
    step(job)
    assert (t.state_of(job), job.restart_count) == (t.RESTARTING, 1)
    step(job)
    assert t.state_of(job) == t.STARTING
    name = until_training(job, engine)  # a fresh attempt, from the start

    engine.vanish(name)
    step(job)
    step(job)

    assert t.state_of(job) == t.FAILED
    assert job.failure_reason == (
        "InternalServerError: the container of algo-1 disappeared from the Docker engine after 1 retry."
    )


ATTACH_TIMEOUT = (
    "attaching to network failed, make sure your network options are correct: context deadline exceeded"
)


def test_the_engine_failing_a_start_by_a_fault_of_its_own_restarts_the_job_per_retry_strategy(engine, store):
    """An engine's 5xx at the start (here a swarm attach that timed out) is the platform's fault:
    an InternalServerError, which RetryStrategy retries, and not the ClientError of a bad spec."""
    job = new_job(RetryStrategy={"MaximumRetryAttempts": 1})
    name = containers.container_name(job, "algo-1")
    engine.faulting[name] = ATTACH_TIMEOUT
    for state in (t.DOWNLOADING, t.TRAINING, t.RESTARTING):
        step(job)
        assert t.state_of(job) == state
    assert t.history(job)[-1].status_message == (
        f'Restarting the training job (retry 1 of 1): could not start the container for algo-1: '
        f'Could not start container "{name}": {ATTACH_TIMEOUT}.'
    )
    step(job)
    assert t.state_of(job) == t.STARTING
    name = until_training(job, engine)  # the second attempt starts
    engine.exit(name, 0)
    step(job)
    step(job)
    assert (job.training_job_status, job.failure_reason) == ("Completed", "")


def test_the_engine_failing_a_start_by_a_fault_of_its_own_fails_a_job_without_retries_as_internal(
    engine, store
):
    job = new_job()
    name = containers.container_name(job, "algo-1")
    engine.faulting[name] = ATTACH_TIMEOUT
    for _ in range(4):
        step(job)

    assert t.state_of(job) == t.FAILED
    assert job.failure_reason == (
        f'InternalServerError: could not start the container for algo-1: Could not start container "{name}": '
        f"{ATTACH_TIMEOUT}."
    )


def test_the_engine_refusing_a_spec_fails_the_job_as_a_client_error_without_retries(engine, store):
    job = new_job(RetryStrategy={"MaximumRetryAttempts": 1})
    name = containers.container_name(job, "algo-1")
    engine.refused[name] = 'exec: "/nope": stat /nope: no such file or directory'
    for _ in range(4):
        step(job)

    assert (t.state_of(job), job.restart_count) == (t.FAILED, 0)
    assert job.failure_reason.startswith("ClientError: could not start the container for algo-1: ")


def test_a_retry_placed_where_the_lost_attempt_ran_never_takes_that_attempts_container_for_its_own(
    engine, store, monkeypatch
):
    """After a node loss, the lost attempt's placements are freed and its restart step runs on
    whichever worker takes it, so the engine the new attempt is placed on may still hold the lost
    attempt's container, here failed when its peer's node went (a reset connection). It is
    retired before the new attempt starts there: the retried job trains and completes, as
    SageMaker retries a job that failed with an InternalServerError (RetryStrategy)."""
    job = new_job(RetryStrategy={"MaximumRetryAttempts": 1})
    lost_attempts = until_training(job, engine)
    engine.exit(lost_attempts, 1)
    training.on_node_lost(job, "test-node-lost")
    job.refresh_from_db()
    assert t.state_of(job) == t.RESTARTING
    elsewhere = FakeRuntime(images=(IMAGE,))
    monkeypatch.setattr(training, "get_runtime", lambda: elsewhere)
    step(job)  # the restart, on another node's worker: nothing of the job on its engine
    assert t.state_of(job) == t.STARTING
    monkeypatch.setattr(training, "get_runtime", lambda: engine)

    step(job)  # placed here again

    assert t.state_of(job) == t.DOWNLOADING
    assert lost_attempts not in engine.containers
    name = until_training_from_downloading(job, engine)
    engine.exit(name, 0)
    step(job)
    step(job)
    assert (job.training_job_status, job.failure_reason) == ("Completed", "")


def until_training_from_downloading(job: TrainingJob, engine: FakeRuntime) -> str:
    step(job)
    assert t.state_of(job) == t.TRAINING
    step(job)
    name = containers.container_name(job, "algo-1")
    assert engine.containers[name].state.running
    return name


def test_a_container_its_killed_worker_created_but_never_started_is_started_and_the_job_completes(
    engine, store
):
    """A worker SIGKILLed between creating the container and starting it leaves it "created"; the
    next worker starts it rather than waiting for it to exit until MaxRuntimeInSeconds."""
    job = new_job()
    name = until_training(job, engine)
    engine.leave_created(name)

    assert step(job) == 0.5
    assert engine.containers[name].state.running
    engine.exit(name, 0)
    step(job)
    step(job)

    assert (job.training_job_status, t.state_of(job)) == ("Completed", t.COMPLETED)


def test_what_a_container_changed_in_its_input_no_other_instance_and_no_retry_sees(engine, store, node):
    """/opt/ml/input is writable: each instance has its own copy, and a retry stages a fresh one."""
    store.put("s3://bucket/train/part-0.csv", b"1,2\n")
    channel = {
        "ChannelName": "train",
        "InputMode": "File",
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bucket/train"}},
    }
    job = new_job(InputDataConfig=[channel], RetryStrategy={"MaximumRetryAttempts": 1})
    job.request["ResourceConfig"]["InstanceCount"] = 2
    TrainingJob.objects.filter(pk=job.pk).update(request=job.request)
    first, second = (workspace.host_workspace(job, host) for host in ("algo-1", "algo-2"))
    step(job)  # Starting → Downloading
    step(job)  # Downloading → Training
    step(job)  # the containers start
    specs = [engine.containers[containers.container_name(job, host)].spec for host in ("algo-1", "algo-2")]
    inputs = [spec.mounts[0] for spec in specs]
    assert [mount.container_path for mount in inputs] == ["/opt/ml/input", "/opt/ml/input"]
    assert not any(mount.read_only for mount in inputs)
    assert inputs[0].host_path != inputs[1].host_path

    (first.channel_dir("train") / "part-0.csv").write_bytes(b"changed by algo-1")
    assert (second.channel_dir("train") / "part-0.csv").read_bytes() == b"1,2\n"
    engine.vanish(containers.container_name(job, "algo-1"))
    step(job)
    step(job)
    assert t.state_of(job) == t.STARTING  # the retry
    step(job)
    step(job)  # staged again

    assert (first.channel_dir("train") / "part-0.csv").read_bytes() == b"1,2\n"


def test_an_image_missing_from_the_engine_fails_the_job_before_training(engine, store):
    job = new_job(AlgorithmSpecification={"TrainingImage": "absent:1", "TrainingInputMode": "File"})

    assert step(job) is None

    assert t.state_of(job) == t.FAILED
    assert job.failure_reason.startswith('ClientError: Image "absent:1" is not present in the local Docker')


def test_an_unreachable_engine_while_training_is_retried_without_failing_the_job(engine, store):
    job = new_job()
    name = until_training(job, engine)
    engine.unreachable = True

    assert step(job) == 0.5
    assert step(job) == 1.0  # backing off
    assert (t.state_of(job), job.failed_attempts) == (t.TRAINING, 2)

    engine.unreachable = False
    engine.exit(name, 0)
    step(job)
    assert (t.state_of(job), job.failed_attempts) == (t.UPLOADING, 0)


# --- What a job waits for (StatusMessage) -----------------------------------------------

CHANNEL = {
    "ChannelName": "train",
    "InputMode": "File",
    "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bucket/train"}},
}


def created_job(**request) -> TrainingJob:
    job = new_job(**request)
    t.record_creation(job)  # as CreateTrainingJob does: the first history row
    return job


def transient_steps() -> float:
    labels = {"kind": "TrainingJob", "outcome": "transient"}
    return REGISTRY.get_sample_value("sageport_reconcile_step_seconds_count", labels) or 0.0


def current_message(job: TrainingJob) -> str:
    return describe_training_job(job)["SecondaryStatusTransitions"][-1]["StatusMessage"]


def test_an_unreachable_engine_is_in_the_status_message_then_fails_the_job(engine, store, settings):
    settings.SAGEPORT_TRANSIENT_RETRY_ATTEMPTS = 3
    engine.unreachable = True
    job = created_job()
    before = transient_steps()

    step(job)
    while t.state_of(job) != t.FAILED and job.failed_attempts == 0:
        step(job)  # the steps before the first one that needs the engine

    assert current_message(job).startswith("Waiting for the Docker engine: ")
    assert "connection refused" in current_message(job)
    assert transient_steps() == before + 1
    for _ in range(settings.SAGEPORT_TRANSIENT_RETRY_ATTEMPTS):
        if t.state_of(job) == t.FAILED:
            break
        step(job)
    assert job.training_job_status == "Failed"
    assert "The Docker engine cannot be reached" in job.failure_reason


def test_an_unreachable_store_is_in_the_status_message_and_clears_when_it_is_back(engine, store):
    store.put("s3://bucket/train/part-0.csv", b"1,2\n")
    store.unreachable = True
    job = created_job(InputDataConfig=[CHANNEL])

    for _ in range(5):
        step(job)
        if job.failed_attempts:
            break

    assert t.state_of(job) == t.DOWNLOADING
    assert current_message(job) == "Waiting for S3: Could not reach the object store: connection refused"

    store.unreachable = False
    step(job)
    assert t.state_of(job) == t.TRAINING
    assert not current_message(job).startswith("Waiting for")


def test_a_pull_is_said_in_the_status_message_while_it_runs(engine, store, settings):
    settings.SAGEPORT_PULL_MISSING_IMAGES = True
    engine.images.clear()
    engine.pullable.add(IMAGE)
    job = created_job()
    seen = []
    pull = engine.pull_image
    engine.pull_image = lambda image, report=None: (seen.append(current_message(job)), pull(image, report))

    for _ in range(4):
        step(job)
        if seen:
            break

    assert seen == [f"Pulling the training image {IMAGE}"]


def test_a_pull_reports_its_progress_in_the_status_message(engine, store, settings):
    settings.SAGEPORT_PULL_MISSING_IMAGES = True
    engine.images.clear()
    engine.pullable.add(IMAGE)
    engine.pull_reports = ["1/3 layers, 10.0 of 30.0 MB", "3/3 layers, 30.0 of 30.0 MB"]
    job = created_job()
    seen = []
    pull = engine.pull_image

    def observed_pull(image, report=None):
        def recording(progress):
            report(progress)
            seen.append(current_message(job))

        pull(image, recording)

    engine.pull_image = observed_pull

    for _ in range(4):
        step(job)
        if seen:
            break

    assert seen == [
        f"Pulling the training image {IMAGE}: 1/3 layers, 10.0 of 30.0 MB",
        f"Pulling the training image {IMAGE}: 3/3 layers, 30.0 of 30.0 MB",
    ]


# --- What the container reaches (gateway/) ------------------------------------------------------


def test_a_container_gets_its_jobs_region_and_credentials_on_the_services_network(engine):
    job = new_job(Environment={"AWS_ENDPOINT_URL_S3": "http://my-own-s3:9000"})
    name = until_training(job, engine)

    spec = engine.containers[name].spec
    assert spec.extra_networks == (SERVICES_NETWORK,)
    assert engine.networks[SERVICES_NETWORK]["internal"]  # created before the container
    assert (spec.environment["AWS_REGION"], spec.environment["AWS_DEFAULT_REGION"]) == (
        job.region,
        job.region,
    )
    token = ContainerGrant.objects.get(holder=job.training_job_arn).token
    assert spec.environment["AWS_CONTAINER_AUTHORIZATION_TOKEN"] == token
    assert spec.environment["AWS_ENDPOINT_URL_S3"] == "http://my-own-s3:9000"  # the user's own wins


def test_the_jobs_environment_cannot_rename_the_job_but_sets_the_images_own_variables(engine):
    """SageMaker passes Environment into the container as given: a PATH replaces the image's
    (aws/sagemaker-python-sdk#1857: `{"PATH": "...:${PATH}"}` arrives unexpanded), and so does
    LD_PRELOAD, which reaches only the user's own processes (Sageport's helpers run on the host).
    TRAINING_JOB_NAME and TRAINING_JOB_ARN name the job the platform runs."""
    job = new_job(Environment={
        "TRAINING_JOB_NAME": "other",
        "TRAINING_JOB_ARN": "arn:aws:sagemaker:us-east-1:999999999999:training-job/other",
        "PATH": "/opt/mine/bin", "LD_PRELOAD": "/opt/mine/lib.so",
    })
    name = until_training(job, engine)

    environment = engine.containers[name].spec.environment
    assert (environment["TRAINING_JOB_NAME"], environment["TRAINING_JOB_ARN"]) == (
        job.training_job_name, job.training_job_arn,
    )
    assert (environment["PATH"], environment["LD_PRELOAD"]) == ("/opt/mine/bin", "/opt/mine/lib.so")


def test_a_network_isolated_container_gets_no_network_endpoints_or_credentials(engine):
    job = new_job(EnableNetworkIsolation=True)
    name = until_training(job, engine)

    spec = engine.containers[name].spec
    assert (spec.network, spec.extra_networks) == ("none", ())
    assert not [variable for variable in spec.environment if variable.startswith("AWS_")]
    assert not ContainerGrant.objects.exists()


def test_the_jobs_credentials_are_revoked_when_it_ends(engine, store):
    job = new_job()
    name = until_training(job, engine)
    key = create_access_key(
        job.account_id, expires_at=timezone.now() + timedelta(hours=1), issued_for=job.training_job_arn
    )

    engine.exit(name, 0)
    while step(job) is not None:
        pass

    assert t.state_of(job) == t.COMPLETED
    assert not ContainerGrant.objects.filter(holder=job.training_job_arn).exists()
    assert not AccessKey.objects.filter(access_key_id=key.access_key_id).exists()


def test_the_sweep_revokes_the_credentials_of_a_job_that_ended_without_its_clean_up(engine, monkeypatch):
    job = new_job()
    until_training(job, engine)
    TrainingJob.objects.filter(pk=job.pk).update(training_job_status="Failed")  # e.g. its node was lost
    monkeypatch.setattr(reaper, "get_runtime", lambda: engine)

    reaper.reap_training_orphans()

    assert not ContainerGrant.objects.exists()


def test_a_restart_goes_on_when_the_engine_cannot_remove_the_jobs_network_yet(engine, store, monkeypatch):
    """A swarm overlay network still counts a lost node's attachment ("is in use by task") until
    that node leaves the swarm: the retry RetryStrategy allows (CreateTrainingJob: "retry the job
    when the job fails due to an InternalServerError") starts on the same network meanwhile."""
    job = new_job(RetryStrategy={"MaximumRetryAttempts": 1})
    name = until_training(job, engine)

    def in_use(network: str) -> None:
        raise RuntimeError_(f'Could not remove network "{network}": network is in use by task 8ggqdj1ay1k9')

    monkeypatch.setattr(engine, "remove_network", in_use)
    engine.vanish(name)
    step(job)
    step(job)

    assert (t.state_of(job), job.restart_count) == (t.STARTING, 1)
    until_training(job, engine)  # the new attempt runs


def test_a_container_that_exits_on_sigterm_is_not_recorded_as_killed(engine, store):
    job = new_job()
    name = until_training(job, engine)
    assert t.transition(job, t.STOPPING_STATE)
    step(job)
    assert engine.containers[name].signals == ["SIGTERM"]
    while step(job) is not None:
        pass
    assert t.state_of(job) == t.STOPPED
    stopped = TrainingJob.objects.get(pk=job.pk)
    assert stopped.stop_signalled_at is not None and stopped.stop_killed_at is None
