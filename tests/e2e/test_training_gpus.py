"""GPU scheduling end to end: a node declaring four GPUs (tests/settings.py), jobs of 1, 2 and 4
GPUs queued first come first served without ever sharing a GPU, jobs no node can hold failing
at once, and instances lost to the infrastructure (a vanished container, a lost node) failing or
restarting per RetryStrategy.

This machine has no NVIDIA runtime, so the test node runs in SAGEPORT_GPU_DEVICE_MODE=env-only
(GPUs selected by NVIDIA_VISIBLE_DEVICES); the DeviceRequest of the default mode is checked on
created containers in tests/unit/runtime/test_docker_runtime.py."""
import time
from contextlib import contextmanager
from datetime import datetime

import docker
import pytest

from devstack.stack import worker_spec
from tests.conftest import _manage
from tests.e2e.conftest import LOST_FAST, read_tar_gz, shell_job, unique_name, wait_for_status

# Each instance records the GPUs it was given, then works for a while.
RECORD_DEVICES = 'echo "$NVIDIA_VISIBLE_DEVICES" > /opt/ml/model/devices-$(hostname); sleep {seconds}'
NODE_B = "test-node-b"


def gpu_job(name, image, bucket, instance_type, count=1, seconds=2, **overrides) -> dict:
    return shell_job(
        name, image, bucket, RECORD_DEVICES.format(seconds=seconds),
        ResourceConfig={"InstanceType": instance_type, "InstanceCount": count, "VolumeSizeInGB": 10},
        **overrides,
    )


def devices_of(s3, bucket, name) -> dict[str, str]:
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    return {member.removeprefix("devices-"): value.decode().strip() for member, value in model.items()}


def transition(job: dict, status: str) -> dict:
    return next(step for step in job["SecondaryStatusTransitions"] if step["Status"] == status)


def statuses(job: dict) -> list[str]:
    return [step["Status"] for step in job["SecondaryStatusTransitions"]]


def running_container(arn: str, timeout: float = 60.0):
    """The job's container once it has run for a second (so the worker has recorded its start)."""
    client = docker.from_env()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = client.containers.list(
            filters={"label": f"sageport.resource={arn}", "status": "running"}, ignore_removed=True
        )
        if found and time.time() - _started(found[0]) > 1.0:
            return found[0]
        time.sleep(0.2)
    raise AssertionError(f"no running container for {arn} after {timeout} s")


def _started(container) -> float:
    return datetime.fromisoformat(container.attrs["State"]["StartedAt"][:26] + "+00:00").timestamp()


def test_gpu_jobs_queue_first_come_first_served_and_never_share_a_gpu(
    sagemaker, s3, bucket, shell_algo_image
):
    two = unique_name("gpu2")  # two ml.p3.2xlarge instances: one GPU each
    four = unique_name("gpu4")  # ml.g5.12xlarge: four GPUs
    one = unique_name("gpu1")  # ml.p3.2xlarge: one GPU, fits at once but must not overtake `four`
    cpu = unique_name("cpu")  # ml.m5.large: no GPU, competes with nobody
    sagemaker.create_training_job(
        **gpu_job(two, shell_algo_image, bucket, "ml.p3.2xlarge", count=2, seconds=4)
    )
    wait_for_status(sagemaker, two, statuses={"Training"})
    container = running_container(sagemaker.describe_training_job(TrainingJobName=two)["TrainingJobArn"])
    sagemaker.create_training_job(**gpu_job(four, shell_algo_image, bucket, "ml.g5.12xlarge"))
    wait_for_status(sagemaker, four, statuses={"Pending"})
    sagemaker.create_training_job(**gpu_job(one, shell_algo_image, bucket, "ml.p3.2xlarge", seconds=1))
    sagemaker.create_training_job(**gpu_job(cpu, shell_algo_image, bucket, "ml.m5.large", seconds=0))

    # What Docker was given: the variable, and no DeviceRequest in this test mode.
    assert container.attrs["HostConfig"]["DeviceRequests"] is None
    assert any(entry in ("NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_VISIBLE_DEVICES=1")
               for entry in container.attrs["Config"]["Env"])
    jobs = {name: wait_for_status(sagemaker, name, timeout=180) for name in (two, four, one, cpu)}

    assert {name: job["TrainingJobStatus"] for name, job in jobs.items()} == dict.fromkeys(jobs, "Completed")
    waiting = transition(jobs[four], "Pending")["StatusMessage"]
    assert "ml.g5.12xlarge x 1 needs 4 NVIDIA GPUs" in waiting and "test-node-a: 2 of 4" in waiting
    assert "older job is waiting first" in transition(jobs[one], "Pending")["StatusMessage"]
    assert "Pending" not in statuses(jobs[cpu])
    assert statuses(jobs[four]) == [
        "Starting", "Pending", "Downloading", "Training", "Uploading", "Completed"
    ]
    # One after the other: a job starts only once the GPUs it needs were given back.
    assert jobs[four]["TrainingStartTime"] >= jobs[two]["TrainingEndTime"]
    assert jobs[one]["TrainingStartTime"] >= jobs[four]["TrainingEndTime"]
    assert devices_of(s3, bucket, two) == {"algo-1": "0", "algo-2": "1"}
    assert devices_of(s3, bucket, four) == {"algo-1": "0,1,2,3"}
    assert devices_of(s3, bucket, one) == {"algo-1": "0"}
    assert devices_of(s3, bucket, cpu) == {"algo-1": "void"}  # the NVIDIA runtime's "no GPU at all"


def test_a_pending_job_can_be_stopped_while_it_waits(sagemaker, bucket, shell_algo_image):
    holder, waiting = unique_name("holder"), unique_name("waiting")
    sagemaker.create_training_job(**gpu_job(holder, shell_algo_image, bucket, "ml.g5.12xlarge", seconds=60))
    wait_for_status(sagemaker, holder, statuses={"Training"})
    sagemaker.create_training_job(**gpu_job(waiting, shell_algo_image, bucket, "ml.p3.2xlarge"))
    wait_for_status(sagemaker, waiting, statuses={"Pending"})

    sagemaker.stop_training_job(TrainingJobName=waiting)
    sagemaker.stop_training_job(TrainingJobName=holder)
    job = wait_for_status(sagemaker, waiting, timeout=60)

    assert job["TrainingJobStatus"] == "Stopped"
    assert statuses(job) == ["Starting", "Pending", "Stopping", "Stopped"]
    assert wait_for_status(sagemaker, holder, timeout=60)["TrainingJobStatus"] == "Stopped"


@pytest.mark.parametrize(
    "instance_type, reason",
    [
        ("ml.p2.16xlarge", "ResourceLimitExceeded: ml.p2.16xlarge x 1 needs 16 NVIDIA GPUs on one node"),
        ("ml.trn1.32xlarge", "ResourceLimitExceeded: ml.trn1.32xlarge needs 16 AWS Trainium devices"),
    ],
)
def test_a_job_no_node_can_ever_hold_fails_at_once(
    sagemaker, bucket, shell_algo_image, instance_type, reason
):
    name = unique_name("toobig")
    sagemaker.create_training_job(**gpu_job(name, shell_algo_image, bucket, instance_type))

    job = wait_for_status(sagemaker, name, timeout=30)

    assert job["TrainingJobStatus"] == "Failed"
    assert job["FailureReason"].startswith(reason)
    assert statuses(job) == ["Starting", "Failed"]


def test_a_vanished_container_restarts_the_job_within_its_retry_strategy(
    sagemaker, s3, bucket, shell_algo_image
):
    name = unique_name("vanish")
    request = gpu_job(name, shell_algo_image, bucket, "ml.p3.2xlarge", seconds=3,
                      RetryStrategy={"MaximumRetryAttempts": 1})
    sagemaker.create_training_job(**request)
    arn = sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]

    running_container(arn).remove(force=True)
    job = wait_for_status(sagemaker, name, timeout=120)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert statuses(job) == [
        "Starting", "Downloading", "Training", "Restarting",
        "Starting", "Downloading", "Training", "Uploading", "Completed",
    ]
    message = transition(job, "Restarting")["StatusMessage"]
    assert "retry 1 of 1" in message and "container of algo-1 disappeared" in message
    assert devices_of(s3, bucket, name) == {"algo-1": "0"}


def test_a_vanished_container_fails_a_job_without_retry_strategy(sagemaker, bucket, shell_algo_image):
    name = unique_name("vanish")
    sagemaker.create_training_job(**gpu_job(name, shell_algo_image, bucket, "ml.p3.2xlarge", seconds=30))
    arn = sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]

    running_container(arn).remove(force=True)
    job = wait_for_status(sagemaker, name, timeout=60)

    assert job["TrainingJobStatus"] == "Failed"
    assert job["FailureReason"] == (
        "InternalServerError: the container of algo-1 disappeared from the Docker engine."
    )


class SecondNode:
    """A second worker standing for another node with sixteen GPUs, on the same Docker engine."""

    def __init__(self, stack, **settings: str):
        self.supervisor = stack.supervisor
        env = {"SAGEPORT_NODE_NAME": NODE_B, "SAGEPORT_NODE_GPUS": ",".join(map(str, range(16))), **LOST_FAST,
               **settings}
        self.spec = worker_spec(stack.data_dir, name="worker-b", env=env)
        self.running = False

    def start(self) -> None:
        self.supervisor.start(self.spec)
        self.running = True

    def kill(self) -> None:
        """SIGKILL, as a machine that disappears: its heartbeats stop, its containers stay."""
        self.running = False
        self.supervisor.kill(self.spec.name)


@contextmanager
def second_node(stack, **settings: str):
    node = SecondNode(stack, **settings)
    node.start()
    try:
        yield node
    finally:
        if node.running:
            node.supervisor.stop(node.spec.name)
        # Retire the node, so that later jobs needing eight or sixteen GPUs fail at once again.
        retire = f"from capacity.models import Node; Node.objects.filter(name='{NODE_B}').delete()"
        _manage("shell", "-c", retire)


@pytest.fixture
def node_b(stack):
    with second_node(stack) as node:
        yield node


def test_an_engine_failing_every_start_by_a_fault_of_its_own_is_retried_then_fails_the_job_as_internal(
    stack, sagemaker, bucket, shell_algo_image
):
    """A node whose engine has no NVIDIA runtime, in the default device-request mode: the engine
    answers each start with its 500 (no device driver), the platform's fault and not the job's, so
    RetryStrategy retries it and the job fails as an InternalServerError, not a ClientError."""
    name = unique_name("nodriver")
    with second_node(stack, SAGEPORT_GPU_DEVICE_MODE="device-request"):  # the only node of 8 GPUs
        sagemaker.create_training_job(**gpu_job(name, shell_algo_image, bucket, "ml.p3.16xlarge",
                                                RetryStrategy={"MaximumRetryAttempts": 1}))
        job = wait_for_status(sagemaker, name, timeout=120)

    assert statuses(job) == [
        "Starting", "Downloading", "Training", "Restarting",
        "Starting", "Downloading", "Training", "Uploading", "Failed",
    ]
    engine_said = 'could not select device driver "nvidia" with capabilities: [[gpu]]'
    assert engine_said in transition(job, "Restarting")["StatusMessage"]
    assert job["FailureReason"].startswith("InternalServerError: could not start the container for algo-1: ")
    assert job["FailureReason"].endswith(f"{engine_said} after 1 retry.")


def test_a_lost_node_fails_its_job_and_a_retry_strategy_restarts_it_when_capacity_returns(
    sagemaker, s3, bucket, shell_algo_image, node_b
):
    # Eight GPUs each: only node B (sixteen) can hold them, both at once, so that one loss of the
    # node (LOST_FAST's seconds of silence before it is declared lost) shows both outcomes.
    lost = unique_name("lost")
    retried = unique_name("retried")
    sagemaker.create_training_job(**gpu_job(lost, shell_algo_image, bucket, "ml.p3.16xlarge", seconds=60))
    running_container(sagemaker.describe_training_job(TrainingJobName=lost)["TrainingJobArn"])
    request = gpu_job(retried, shell_algo_image, bucket, "ml.p3.16xlarge", seconds=3,
                      RetryStrategy={"MaximumRetryAttempts": 2})
    sagemaker.create_training_job(**request)
    running_container(sagemaker.describe_training_job(TrainingJobName=retried)["TrainingJobArn"])
    node_b.kill()  # while `retried` still runs (its first attempt, too, lasts three seconds)

    failed = wait_for_status(sagemaker, lost, timeout=60)
    wait_for_status(sagemaker, retried, statuses={"Restarting", "Pending"}, timeout=60)

    assert failed["TrainingJobStatus"] == "Failed"
    assert failed["FailureReason"] == (
        f"InternalServerError: the node {NODE_B} that ran it stopped sending heartbeats."
    )
    node_b.start()  # the node comes back: the job runs there again
    job = wait_for_status(sagemaker, retried, timeout=120)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert "Restarting" in statuses(job)
    message = transition(job, "Restarting")["StatusMessage"]
    assert f"the node {NODE_B} that ran it stopped sending heartbeats" in message
    assert devices_of(s3, bucket, retried) == {"algo-1": "0,1,2,3,4,5,6,7"}
