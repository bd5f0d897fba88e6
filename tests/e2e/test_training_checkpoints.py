"""CheckpointConfig: `<LocalPath>/<rel>` synced with `<S3Uri>/<rel>` before, during and after a job."""
import time

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status

# Writes checkpoints at once, deletes one of them a while later, and writes a last one when
# stopped; runs until then.
CHECKPOINTS_UNTIL_STOPPED = """
trap 'echo at-stop > /opt/ml/checkpoints/at-stop.txt; exit 0' TERM
mkdir -p /opt/ml/checkpoints/nested
echo kept > /opt/ml/checkpoints/kept.txt
echo deep > /opt/ml/checkpoints/nested/deep.txt
echo doomed > /opt/ml/checkpoints/doomed.txt
sleep 6
rm /opt/ml/checkpoints/doomed.txt
while true; do sleep 0.2; done
"""

# Lists what it finds in its checkpoint directory, then writes a checkpoint of its own and ends.
RESUMES = """
cd /checkpoints
find . -type f | sort | while read -r file; do echo "$file=$(cat "$file")"; done > /opt/ml/model/seen
echo resumed > /checkpoints/resumed.txt
"""

FAILS_AFTER_A_CHECKPOINT = "echo last-words > /opt/ml/checkpoints/before-failure.txt; exit 3"


def checkpoint_keys(s3, bucket: str) -> set[str]:
    listing = s3.list_objects_v2(Bucket=bucket, Prefix="ckpt/")
    return {item["Key"].removeprefix("ckpt/") for item in listing.get("Contents", ())}


def wait_for_keys_while_running(sagemaker, s3, bucket: str, name: str, condition, timeout=60.0) -> set:
    """Poll S3 until `condition(keys)` holds, checking the job is still running when it does."""
    deadline = time.monotonic() + timeout
    while True:
        keys = checkpoint_keys(s3, bucket)
        if condition(keys):
            assert sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] == "InProgress"
            return keys
        assert time.monotonic() < deadline, f"S3 never got there; last seen {sorted(keys)}"
        time.sleep(0.2)


def test_checkpoints_are_uploaded_and_deleted_in_s3_while_the_job_runs_and_synced_at_stop(
    sagemaker, s3, bucket, shell_algo_image
):
    name = unique_name("ckpt-live")
    config = {"S3Uri": f"s3://{bucket}/ckpt"}
    request = shell_job(name, shell_algo_image, bucket, CHECKPOINTS_UNTIL_STOPPED, CheckpointConfig=config)
    sagemaker.create_training_job(**request)

    wait_for_keys_while_running(sagemaker, s3, bucket, name, lambda keys: "doomed.txt" in keys)
    keys = wait_for_keys_while_running(sagemaker, s3, bucket, name, lambda keys: "doomed.txt" not in keys)
    assert keys == {"kept.txt", "nested/deep.txt"}
    sagemaker.stop_training_job(TrainingJobName=name)
    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Stopped", job.get("FailureReason")
    assert checkpoint_keys(s3, bucket) == {"kept.txt", "nested/deep.txt", "at-stop.txt"}
    assert s3.get_object(Bucket=bucket, Key="ckpt/at-stop.txt")["Body"].read() == b"at-stop\n"


def test_a_job_with_the_same_checkpoint_config_resumes_from_a_stopped_jobs_checkpoints(
    sagemaker, s3, bucket, shell_algo_image
):
    first, second = unique_name("ckpt-first"), unique_name("ckpt-second")
    uri = f"s3://{bucket}/ckpt/"
    saves = "trap 'echo at-stop > /opt/ml/checkpoints/at-stop.txt; exit 0' TERM; while :; do sleep 0.2; done"
    request = shell_job(first, shell_algo_image, bucket, saves, CheckpointConfig={"S3Uri": uri})
    sagemaker.create_training_job(**request)
    wait_for_status(sagemaker, first, statuses={"Training"})
    time.sleep(1.0)  # let the algorithm install its handler
    sagemaker.stop_training_job(TrainingJobName=first)
    assert wait_for_status(sagemaker, first)["TrainingJobStatus"] == "Stopped"
    s3.put_object(Bucket=bucket, Key="ckpt/nested/step-7.bin", Body=b"seven")

    config = {"S3Uri": uri, "LocalPath": "/checkpoints"}
    request = shell_job(second, shell_algo_image, bucket, RESUMES, CheckpointConfig=config)
    sagemaker.create_training_job(**request)
    job = wait_for_status(sagemaker, second)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    seen = read_tar_gz(s3, bucket, f"output/{second}/output/model.tar.gz")["seen"]
    assert seen == b"./at-stop.txt=at-stop\n./nested/step-7.bin=seven\n"
    assert checkpoint_keys(s3, bucket) == {"at-stop.txt", "nested/step-7.bin", "resumed.txt"}


def test_a_checkpoint_written_just_before_a_failure_is_synced(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("ckpt-failed")
    config = {"S3Uri": f"s3://{bucket}/ckpt"}
    request = shell_job(name, shell_algo_image, bucket, FAILS_AFTER_A_CHECKPOINT, CheckpointConfig=config)
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Failed"
    assert s3.get_object(Bucket=bucket, Key="ckpt/before-failure.txt")["Body"].read() == b"last-words\n"
