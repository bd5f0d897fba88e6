"""A job reacts to its container's exit when it happens, not at its next poll: the worker follows
the engine's events (reconcile/container_events.py). The worker here polls every 60 s, and the
sweeper re-enqueues only jobs whose look is overdue, so nothing but the event can move a job on
within the bounded waits below."""

from contextlib import contextmanager

import pytest

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status
from tests.e2e.test_training_stop import SAVES_ON_SIGTERM, wait_until_training

POLL_SECONDS = 60
WITHIN = 20  # well before the next poll could come


@contextmanager
def worker_with(stack, **env: str):
    """The session's worker replaced by one with `env` for the duration, then restored."""
    stack.kill_worker()
    stack.start_worker(**env)
    try:
        yield
    finally:
        stack.kill_worker()
        stack.start_worker()


@pytest.fixture(scope="module")
def slow_polling_worker(stack):
    with worker_with(stack, SAGEPORT_POLL_INTERVAL_SECONDS=str(POLL_SECONDS)):
        yield


def test_a_job_completes_when_its_container_exits(
    slow_polling_worker, sagemaker, s3, bucket, shell_algo_image
):
    name = unique_name("exits")
    script = "sleep 1; echo trained > /opt/ml/model/weights"
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))

    job = wait_for_status(sagemaker, name, timeout=WITHIN)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz") == {"weights": b"trained\n"}


def test_a_stopped_job_is_stopped_when_its_container_exits(
    slow_polling_worker, sagemaker, bucket, shell_algo_image
):
    name = unique_name("stop-exits")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, SAVES_ON_SIGTERM))
    wait_until_training(sagemaker, name, timeout=WITHIN)

    sagemaker.stop_training_job(TrainingJobName=name)
    job = wait_for_status(sagemaker, name, timeout=WITHIN)

    assert (job["TrainingJobStatus"], job["SecondaryStatus"]) == ("Stopped", "Stopped")
