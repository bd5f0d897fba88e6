"""A worker killed with SIGKILL mid-job loses nothing once a worker runs again."""

import time

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status


def test_worker_killed_mid_job_and_restarted_finishes_the_job_with_its_artifacts(
    stack, sagemaker, s3, bucket, shell_algo_image
):
    name = unique_name("crash")
    script = "echo started; sleep 4; echo trained > /opt/ml/model/weights"
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))
    wait_for_status(sagemaker, name, statuses={"Training"})

    stack.kill_worker()
    try:
        time.sleep(5)  # the container finishes while no worker is watching
        assert sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] == "InProgress"
    finally:
        stack.start_worker()

    # The dead worker's lease on the job (SAGEPORT_LEASE_SECONDS) runs out before the sweeper hands
    # the job on: generous, so that a loaded machine never fails this (a pass costs no more time).
    job = wait_for_status(sagemaker, name, timeout=300)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz") == {"weights": b"trained\n"}
    statuses = [step["Status"] for step in job["SecondaryStatusTransitions"]]
    assert statuses == ["Starting", "Downloading", "Training", "Uploading", "Completed"]
