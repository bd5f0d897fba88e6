"""Batch transform with the SageMaker Python SDK v2, unchanged: `Transformer(...).transform(...,
wait=True, logs=True)` and `estimator.transformer(...).transform(...)` (the SDK's
`Session.logs_for_transform_job` reads /aws/sagemaker/TransformJobs while it waits); and SDK v3's
`sagemaker.core.transformer.Transformer`, the same API on sagemaker-core's `TransformJob`
resource, whose `wait(logs=True)` polls DescribeTransformJob and prints the job's streams."""

import os
import subprocess
import sys
import textwrap

from sagemaker.estimator import Estimator
from sagemaker.transformer import Transformer

from tests.conftest import read_env_file
from tests.e2e.conftest import unique_name
from tests.e2e.sdk import ROLE, WatchedOutput

pytest_plugins = ["tests.e2e.hosting_fixtures", "tests.e2e.transform_fixtures"]  # transformer_image


def _read(s3, bucket: str, key: str) -> str:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode()


def test_transformer_waits_with_logs(sdk_session, sagemaker, s3, bucket, transformer_image, monkeypatch):
    model_name = unique_name("sdk-model")
    sagemaker.create_model(ModelName=model_name, PrimaryContainer={"Image": transformer_image})
    s3.put_object(Bucket=bucket, Key="batch/rows.csv", Body=b"one\ntwo\nthree\n")
    transformer = Transformer(
        model_name=model_name,
        instance_count=1,
        instance_type="ml.m5.large",
        output_path=f"s3://{bucket}/sdk-out",
        assemble_with="Line",
        accept="text/csv",
        strategy="SingleRecord",
        sagemaker_session=sdk_session,
    )
    output = WatchedOutput("BatchStrategy=SINGLE_RECORD")
    monkeypatch.setattr(sys, "stdout", output)

    transformer.transform(
        f"s3://{bucket}/batch/", content_type="text/csv", split_type="Line", wait=True, logs=True
    )

    job = sagemaker.describe_transform_job(TransformJobName=transformer.latest_transform_job.name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    assert _read(s3, bucket, "sdk-out/rows.csv.out") == "ONE\nTWO\nTHREE\n"
    # The data log and the container's output were printed while the SDK waited. Not every line
    # of the container's: the SDK lists the instance's stream twice (its DescribeLogStreams loop
    # asks for `limit=instance_count`, then again without the token: the instance stream, then it
    # and the data log), so its shared skip count drops the first new event of each pass, as it
    # does on SageMaker. Which lines a pass drops depends on when the SDK looked.
    assert output.printed.is_set(), output.text
    served = ("POST /invocations", "invocation content-type=text/csv")
    assert any(line in output.text for line in served), output.text


def test_estimator_transformer_runs_the_trained_model(sdk_session, sagemaker, s3, bucket, transformer_image):
    estimator = Estimator(
        image_uri=transformer_image,
        role=ROLE,
        instance_count=1,
        instance_type="ml.m5.large",
        output_path=f"s3://{bucket}/model",
        sagemaker_session=sdk_session,
    )
    estimator.fit(logs=False)
    s3.put_object(Bucket=bucket, Key="batch/rows.csv", Body=b"a,1\nb,2\n")
    transformer = estimator.transformer(
        instance_count=1, instance_type="ml.m5.large", output_path=f"s3://{bucket}/est-out", accept="text/csv"
    )

    transformer.transform(
        f"s3://{bucket}/batch/rows.csv", content_type="text/csv", split_type="Line", wait=True
    )

    job = sagemaker.describe_transform_job(TransformJobName=transformer.latest_transform_job.name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    # No AssembleWith: the answers are concatenated as the model gave them (AssembleWith None).
    assert _read(s3, bucket, "est-out/rows.csv.out") == "A,1\nB,2"


SDK_V3_SCRIPT = textwrap.dedent("""
    import logging
    import sys
    from sagemaker.core.transformer import Transformer

    logging.basicConfig(level=logging.INFO)  # where sagemaker-core's wait(logs=True) prints

    model_name, source, destination = sys.argv[1:4]
    transformer = Transformer(
        model_name=model_name, instance_count=1, instance_type="ml.m5.large",
        output_path=destination, assemble_with="Line", accept="text/csv", strategy="SingleRecord",
    )
    transformer.transform(source, content_type="text/csv", split_type="Line", wait=True, logs=True)
    print(transformer.latest_transform_job.transform_job_name)
""")


def test_sdk_v3_transformer_runs_and_waits_with_logs(
    stack, sagemaker, s3, bucket, transformer_image, sdk_v3_python, tmp_path
):
    """SDK v3 (sagemaker 3.x, its own virtualenv), configured by the stack's env file alone."""
    model_name = unique_name("sdk3-model")
    sagemaker.create_model(ModelName=model_name, PrimaryContainer={"Image": transformer_image})
    s3.put_object(Bucket=bucket, Key="v3in/rows.csv", Body=b"one\ntwo\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **read_env_file(stack.data_dir / "env")}

    result = subprocess.run(
        [sdk_v3_python, "-c", SDK_V3_SCRIPT, model_name, f"s3://{bucket}/v3in/", f"s3://{bucket}/v3out"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )

    assert result.returncode == 0, result.stderr[-4000:]
    name = result.stdout.split()[-1]
    job = sagemaker.describe_transform_job(TransformJobName=name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    assert _read(s3, bucket, "v3out/rows.csv.out") == "ONE\nTWO\n"
    # logs=True logged the container's output while the SDK waited.
    assert "invocation content-type=text/csv" in result.stderr, result.stderr[-4000:]
