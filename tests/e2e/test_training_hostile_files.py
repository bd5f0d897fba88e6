"""A hostile algorithm plants symlinks to host files, FIFOs and swapped directories in what it
writes: the worker never reads a host file through them, never blocks on them, and keeps
serving other jobs."""
import io
import tarfile
import time

import pytest

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status

SECRET = "host-secret-4f1d9c"


@pytest.fixture
def host_dir(tmp_path):
    """A directory on the host (never mounted into a container) holding a secret file."""
    directory = tmp_path / "host"
    directory.mkdir()
    (directory / "secret.txt").write_text(SECRET)
    (directory / "step.pt").write_text(SECRET)
    return directory


def test_a_failure_file_linked_to_a_host_file_is_ignored_not_read(
    sagemaker, bucket, shell_algo_image, host_dir
):
    name = unique_name("faillink")
    script = f"echo preparing; ln -s {host_dir / 'secret.txt'} /opt/ml/output/failure; exit 3"
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Failed"
    reason = job["FailureReason"]
    assert reason.startswith("AlgorithmError:") and "exit code 3" in reason and "preparing" in reason
    assert SECRET not in reason and "secret.txt" not in reason


def test_a_failure_file_that_is_a_fifo_neither_blocks_the_job_nor_the_others(
    sagemaker, bucket, shell_algo_image
):
    fifo_job, other_job = unique_name("failfifo"), unique_name("after-fifo")
    sagemaker.create_training_job(
        **shell_job(fifo_job, shell_algo_image, bucket, "mkfifo /opt/ml/output/failure; exit 4")
    )
    job = wait_for_status(sagemaker, fifo_job, timeout=60)
    sagemaker.create_training_job(
        **shell_job(other_job, shell_algo_image, bucket, "echo fine > /opt/ml/model/done")
    )

    assert job["TrainingJobStatus"] == "Failed"
    assert job["FailureReason"].startswith("AlgorithmError:") and "exit code 4" in job["FailureReason"]
    assert wait_for_status(sagemaker, other_job, timeout=60)["TrainingJobStatus"] == "Completed"


def test_links_in_the_model_and_output_dirs_are_packed_as_links_never_as_host_content(
    sagemaker, s3, bucket, shell_algo_image, host_dir
):
    name = unique_name("packlinks")
    script = (
        "echo weights > /opt/ml/model/weights.bin;"
        f"ln -s {host_dir / 'secret.txt'} /opt/ml/model/secret-link;"
        f"ln -s {host_dir} /opt/ml/model/host-dir;"
        "mkfifo /opt/ml/model/pipe;"
        # The whole output data directory swapped for a link to the host directory.
        f"rm -rf /opt/ml/output/data; ln -s {host_dir} /opt/ml/output/data"
    )
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = _members(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert sorted(model) == ["host-dir", "secret-link", "weights.bin"]
    assert model["secret-link"].issym() and model["secret-link"].linkname == str(host_dir / "secret.txt")
    assert model["host-dir"].issym()
    assert read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz") == {"weights.bin": b"weights\n"}
    assert _members(s3, bucket, f"output/{name}/output/output.tar.gz") == {}


def test_uncompressed_model_upload_skips_links_to_host_files(
    sagemaker, s3, bucket, shell_algo_image, host_dir
):
    name = unique_name("rawlinks")
    script = (
        "mkdir /opt/ml/model/sub; echo weights > /opt/ml/model/sub/weights.bin;"
        f"ln -s {host_dir / 'secret.txt'} /opt/ml/model/secret-link; ln -s {host_dir} /opt/ml/model/host-dir"
    )
    output = {"S3OutputPath": f"s3://{bucket}/output", "CompressionType": "NONE"}
    request = shell_job(name, shell_algo_image, bucket, script, OutputDataConfig=output)
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    prefix = f"output/{name}/output/model/"
    listing = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)
    assert [item["Key"] for item in listing.get("Contents", ())] == [f"{prefix}sub/weights.bin"]


# Swaps its checkpoint directory `real` (holding step.pt) with a link to a host directory (holding
# a step.pt of its own and more) as fast as it can while the sync scans and uploads, then ends.
SWAPS_CHECKPOINT_DIR = """
cd /opt/ml/checkpoints && mkdir real && echo mine > real/step.pt
i=0
while [ $i -lt 1500 ]; do
  mv real parked && ln -s {host} real && rm real && mv parked real
  i=$((i + 1))
done
ln -s {host} linked
"""


def test_checkpoint_dirs_swapped_for_links_to_a_host_dir_upload_nothing_of_it(
    sagemaker, s3, bucket, shell_algo_image, host_dir
):
    name = unique_name("ckptswap")
    script = SWAPS_CHECKPOINT_DIR.format(host=host_dir)
    config = {"S3Uri": f"s3://{bucket}/ckpt"}
    request = shell_job(name, shell_algo_image, bucket, script, CheckpointConfig=config)
    sagemaker.create_training_job(**request)

    leaked = set()
    deadline = time.monotonic() + 120
    while sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] == "InProgress":
        leaked |= _checkpoints_with_host_content(s3, bucket)  # what the sync uploaded so far
        assert time.monotonic() < deadline, "the job never ended"
    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert leaked == set()
    listing = s3.list_objects_v2(Bucket=bucket, Prefix="ckpt/")
    assert [item["Key"] for item in listing.get("Contents", ())] == ["ckpt/real/step.pt"]
    assert s3.get_object(Bucket=bucket, Key="ckpt/real/step.pt")["Body"].read() == b"mine\n"


def _checkpoints_with_host_content(s3, bucket: str) -> set[str]:
    found = set()
    for item in s3.list_objects_v2(Bucket=bucket, Prefix="ckpt/").get("Contents", ()):
        try:
            body = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        except s3.exceptions.NoSuchKey:
            continue  # deleted by the sync meanwhile
        if SECRET.encode() in body or item["Key"].endswith("secret.txt"):
            found.add(item["Key"])
    return found


def _members(s3, bucket: str, key: str) -> dict[str, tarfile.TarInfo]:
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as archive:
        return {member.name: member for member in archive.getmembers()}
