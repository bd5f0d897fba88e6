"""Stopping training: StopTrainingJob and MaxRuntimeInSeconds, with SageMaker's SIGTERM contract."""

import time

import pytest
from botocore.exceptions import ClientError
from django.conf import settings

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status

# Saves an artifact when SIGTERM arrives, as SageMaker's docs tell algorithms to.
SAVES_ON_SIGTERM = """
trap 'echo saved-on-sigterm > /opt/ml/model/checkpoint; exit 0' TERM
echo training
while true; do sleep 0.2; done
"""
# PID 1 without a handler: the kernel does not deliver SIGTERM to it, so only SIGKILL ends it.
IGNORES_SIGTERM = "echo early > /opt/ml/model/early; while true; do sleep 0.2; done"


def wait_until_training(sagemaker, name: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while sagemaker.describe_training_job(TrainingJobName=name)["SecondaryStatus"] != "Training":
        assert time.monotonic() < deadline, f"{name} never reached Training"
        time.sleep(0.3)
    time.sleep(1.0)  # let the algorithm install its handler


def test_stop_training_job_uploads_artifacts_saved_on_sigterm(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("sigterm")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, SAVES_ON_SIGTERM))
    wait_until_training(sagemaker, name)

    sagemaker.stop_training_job(TrainingJobName=name)
    assert sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] in (
        "Stopping",
        "Stopped",
    )
    job = wait_for_status(sagemaker, name)

    assert (job["TrainingJobStatus"], job["SecondaryStatus"]) == ("Stopped", "Stopped")
    assert [step["Status"] for step in job["SecondaryStatusTransitions"]][-2:] == ["Stopping", "Stopped"]
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert model == {"checkpoint": b"saved-on-sigterm\n"}


def test_container_ignoring_sigterm_is_killed_after_the_grace_period(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("stubborn")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, IGNORES_SIGTERM))
    wait_until_training(sagemaker, name)

    sagemaker.stop_training_job(TrainingJobName=name)
    stopping = wait_for_status(sagemaker, name, statuses={"Stopping"})
    assert stopping["TrainingJobStatus"] == "Stopping"
    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Stopped"
    stopping_step = next(s for s in job["SecondaryStatusTransitions"] if s["Status"] == "Stopping")
    grace = settings.SAGEPORT_STOP_GRACE_SECONDS
    assert (stopping_step["EndTime"] - stopping_step["StartTime"]).total_seconds() >= grace
    assert read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz") == {"early": b"early\n"}


def test_max_runtime_stops_the_job_with_max_runtime_exceeded(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("maxrun")
    request = shell_job(
        name, shell_algo_image, bucket, SAVES_ON_SIGTERM, StoppingCondition={"MaxRuntimeInSeconds": 3}
    )
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name, timeout=60)

    assert (job["TrainingJobStatus"], job["SecondaryStatus"]) == ("Stopped", "MaxRuntimeExceeded")
    assert read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz") == {
        "checkpoint": b"saved-on-sigterm\n"
    }


def test_stopping_a_finished_job_is_a_validation_error(sagemaker, bucket, shell_algo_image):
    name = unique_name("finished")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "true"))
    assert wait_for_status(sagemaker, name)["TrainingJobStatus"] == "Completed"

    with pytest.raises(ClientError) as caught:
        sagemaker.stop_training_job(TrainingJobName=name)

    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] == "Completed"
