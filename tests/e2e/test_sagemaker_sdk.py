"""The SageMaker Python SDK (v2), pointed at Sageport only by the stack's environment file (and
the SDK config file it names)."""

import sys
import threading
import uuid

from sagemaker import fw_utils
from sagemaker.estimator import Estimator
from sagemaker.s3 import S3Downloader, S3Uploader

from devstack.stack import PROJECT_DIR
from tests.e2e.sdk import ROLE, WatchedOutput


def estimator_for(session, image: str, bucket: str, script: str, **options) -> Estimator:
    return Estimator(
        image_uri=image,
        role=ROLE,
        instance_count=1,
        instance_type="ml.m5.large",
        output_path=f"s3://{bucket}/sdk",
        environment={"ALGO_SCRIPT": script},
        sagemaker_session=session,
        **options,
    )


def test_fit_returns_once_the_job_completed_with_its_output_printed_and_metrics_reported(
    sdk_session, sagemaker, bucket, shell_algo_image, monkeypatch
):
    script = "echo 'epoch 1 loss=0.5'; echo 'epoch 2 loss=0.25'; echo model > /opt/ml/model/weights"
    metrics = [{"Name": "train:loss", "Regex": r"loss=([0-9.]+)"}]
    estimator = estimator_for(sdk_session, shell_algo_image, bucket, script, metric_definitions=metrics)
    output = WatchedOutput("epoch 2 loss=0.25")
    monkeypatch.setattr(sys, "stdout", output)

    estimator.fit(logs=True)

    job = sagemaker.describe_training_job(TrainingJobName=estimator.latest_training_job.name)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert output.printed.is_set() and "epoch 1 loss=0.5\n" in output.text, output.text
    assert [(m["MetricName"], m["Value"]) for m in job["FinalMetricDataList"]] == [("train:loss", 0.25)]
    assert estimator.model_data == f"s3://{bucket}/sdk/{job['TrainingJobName']}/output/model.tar.gz"


def test_fit_with_logs_prints_the_output_while_the_job_runs(
    sdk_session, sagemaker, bucket, shell_algo_image, monkeypatch
):
    # Trains until stopped: the test stops the job only once fit() has printed the first line,
    # which proves the output was streamed while the job was running.
    script = "echo first line; trap 'echo saving model; exit 0' TERM; while :; do sleep 0.2; done"
    estimator = estimator_for(sdk_session, shell_algo_image, bucket, script)
    output = WatchedOutput("first line")
    monkeypatch.setattr(sys, "stdout", output)

    def stop_after_first_line():
        output.printed.wait(timeout=90)  # on timeout, stop anyway so fit() returns and the test fails
        try:
            sagemaker.stop_training_job(TrainingJobName=estimator.latest_training_job.name)
        except sagemaker.exceptions.ClientError:
            pass  # the job ended by itself: the assertions below say how

    stopper = threading.Thread(target=stop_after_first_line)
    stopper.start()
    try:
        estimator.fit(logs=True)
    finally:
        stopper.join(timeout=120)

    job = sagemaker.describe_training_job(TrainingJobName=estimator.latest_training_job.name)
    assert job["TrainingJobStatus"] == "Stopped", (job.get("FailureReason"), output.text)
    assert output.printed.is_set(), output.text
    assert output.text.index("first line\n") < output.text.index("saving model\n")


def test_the_default_bucket_and_fit_without_output_path_need_nothing_but_the_env_file(
    stack, sdk_session, sagemaker, python_image
):
    bucket = sdk_session.default_bucket()
    train = sdk_session.upload_data(
        str(PROJECT_DIR / "examples" / "linear_regression" / "train.csv"), key_prefix="sdk-default-bucket"
    )
    # As docs/clients.md shows it: no session, no output_path; the Estimator makes its own Session.
    estimator = Estimator(image_uri=python_image, role=ROLE, instance_count=1, instance_type="ml.m5.large")

    estimator.fit({"train": train}, logs=False)

    job = sagemaker.describe_training_job(TrainingJobName=estimator.latest_training_job.name)
    assert bucket == f"sagemaker-{stack.region}-{stack.account_id}"
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model_key = f"{job['TrainingJobName']}/output/model.tar.gz"
    assert estimator.model_data == f"s3://{bucket}/{model_key}"
    assert stack.client("s3").head_object(Bucket=bucket, Key=model_key)["ContentLength"] > 0


def test_the_sdks_s3_uploader_and_downloader_work_in_the_default_bucket(sdk_session, tmp_path):
    source = tmp_path / "hyperparameters.json"
    source.write_text('{"epochs": 3}')
    prefix = f"s3://{sdk_session.default_bucket()}/sdk-uploader"

    uri = S3Uploader.upload(str(source), prefix, sagemaker_session=sdk_session)

    assert uri == f"{prefix}/hyperparameters.json"
    assert S3Downloader.read_file(uri, sagemaker_session=sdk_session) == '{"epochs": 3}'
    assert S3Downloader.list(prefix, sagemaker_session=sdk_session) == [uri]


def test_upload_data_works_in_a_bucket_of_any_name(sdk_session, tmp_path):
    bucket = f"my-data-{uuid.uuid4().hex[:8]}"  # a free-form name, as on SageMaker
    sdk_session.boto_session.client("s3").create_bucket(Bucket=bucket)
    source = tmp_path / "train.csv"
    source.write_text("1,2\n")

    uri = sdk_session.upload_data(str(source), bucket=bucket, key_prefix="linear")

    assert uri == f"s3://{bucket}/linear/train.csv"
    assert S3Downloader.read_file(f"{uri}", sagemaker_session=sdk_session) == "1,2\n"


def test_script_mode_uploads_the_source_dir_with_sse_kms(sdk_session, tmp_path):
    """`tar_and_upload_dir` is what every framework estimator's fit() runs first; it asks for
    `aws:kms` with no key id, which the bundled store refused before the gateway."""
    source_dir = tmp_path / "src"
    source_dir.mkdir()
    (source_dir / "train.py").write_text("print('training')\n")
    bucket = sdk_session.default_bucket()

    uploaded = fw_utils.tar_and_upload_dir(
        sdk_session.boto_session, bucket, "script-mode", "train.py", directory=str(source_dir)
    )

    assert uploaded.s3_prefix == f"s3://{bucket}/script-mode/sourcedir.tar.gz"
    head = sdk_session.boto_session.client("s3").head_object(
        Bucket=bucket, Key="script-mode/sourcedir.tar.gz"
    )
    assert head["ServerSideEncryption"] == "aws:kms"
    assert head["ContentLength"] > 0
