"""Training jobs that fail: what FailureReason says, and that artifacts are still uploaded."""

import json

from tests.e2e.conftest import read_tar_gz, shell_job, training_request, unique_name, wait_for_status


def test_failure_file_becomes_the_failure_reason_framed_and_truncated_to_1024_characters(
    sagemaker, s3, bucket, shell_algo_image
):
    name = unique_name("failfile")
    script = (
        "echo partial > /opt/ml/model/partial;"
        "printf 'ValueError: bad column %s' $(printf 'x%.0s' $(seq 1 2000)) > /opt/ml/output/failure; exit 3"
    )
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Failed"
    assert job["SecondaryStatus"] == "Failed"
    # SageMaker's framing, which user code matches on; the file's text is cut to fit.
    assert job["FailureReason"].startswith("AlgorithmError: ValueError: bad column xxx")
    assert job["FailureReason"].endswith("xxx, exit code: 3")
    assert len(job["FailureReason"]) == 1024
    assert read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz") == {"partial": b"partial\n"}


def test_exit_code_without_failure_file_reports_the_code_and_the_last_log_lines(
    sagemaker, bucket, shell_algo_image
):
    name = unique_name("exitcode")
    script = "echo loading data; echo 'Traceback: division by zero' >&2; exit 7"
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, script))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Failed"
    reason = job["FailureReason"]
    assert reason.startswith("AlgorithmError:") and "exit code 7" in reason
    assert "loading data" in reason and "Traceback: division by zero" in reason


def test_image_missing_from_the_engine_fails_with_a_clear_reason(sagemaker, bucket):
    name = unique_name("noimage")
    sagemaker.create_training_job(**training_request(name, "sageport-test/does-not-exist:1.0", bucket))

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Failed"
    assert "sageport-test/does-not-exist:1.0" in job["FailureReason"]


def test_s3_key_that_would_escape_the_channel_directory_is_refused(sagemaker, s3, bucket, shell_algo_image):
    manifest = [{"prefix": f"s3://{bucket}/data/"}, "ok.csv", "../../escape.csv"]
    s3.put_object(Bucket=bucket, Key="data/ok.csv", Body=b"fine")
    s3.put_object(Bucket=bucket, Key="manifest.json", Body=json.dumps(manifest).encode())
    name = unique_name("escape")
    request = shell_job(
        name,
        shell_algo_image,
        bucket,
        "echo should-not-run > /opt/ml/model/ran",
        InputDataConfig=[
            {
                "ChannelName": "train",
                "DataSource": {
                    "S3DataSource": {"S3DataType": "ManifestFile", "S3Uri": f"s3://{bucket}/manifest.json"}
                },
            }
        ],
    )
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Failed"
    assert "../../escape.csv" in job["FailureReason"] and "outside" in job["FailureReason"]
    assert [step["Status"] for step in job["SecondaryStatusTransitions"]] == [
        "Starting",
        "Downloading",
        "Failed",
    ]


def test_missing_input_bucket_fails_the_job_during_download(sagemaker, bucket, shell_algo_image):
    name = unique_name("nobucket")
    request = shell_job(
        name,
        shell_algo_image,
        bucket,
        "true",
        InputDataConfig=[
            {
                "ChannelName": "train",
                "DataSource": {
                    "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://no-such-bucket-xyz/p/"}
                },
            }
        ],
    )
    sagemaker.create_training_job(**request)

    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Failed"
    assert "no-such-bucket-xyz" in job["FailureReason"]
