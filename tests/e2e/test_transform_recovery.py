"""A worker killed with SIGKILL while it runs a transform job: once a worker runs again, the job
is run again from the start (its lease lapses, the sweeper hands it on) and completes with every
`.out` whole."""

import time

from tests.e2e.conftest import unique_name

pytest_plugins = ["tests.e2e.hosting_fixtures", "tests.e2e.transform_fixtures"]  # transformer_image


def test_worker_killed_mid_transform_and_restarted_completes_the_job(
    stack, sagemaker, s3, bucket, transformer_image
):
    model = unique_name("transformer")
    sagemaker.create_model(ModelName=model, PrimaryContainer={"Image": transformer_image})
    s3.put_object(Bucket=bucket, Key="in/rows.csv", Body=b"nap\n" * 4 + b"last\n")
    name = unique_name("crash")
    sagemaker.create_transform_job(
        TransformJobName=name,
        ModelName=model,
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/in/"}},
            "SplitType": "Line",
        },
        TransformOutput={"S3OutputPath": f"s3://{bucket}/out/", "AssembleWith": "Line"},
        TransformResources={"InstanceType": "ml.m5.large", "InstanceCount": 1},
        BatchStrategy="SingleRecord",
    )
    deadline = time.monotonic() + 60
    while sagemaker.describe_transform_job(TransformJobName=name).get("TransformStartTime") is None:
        assert time.monotonic() < deadline
        time.sleep(0.2)

    stack.kill_worker()
    stack.start_worker()

    # The dead worker's lease (SAGEPORT_LEASE_SECONDS) lapses before the sweeper hands the job on.
    sagemaker.get_waiter("transform_job_completed_or_stopped").wait(
        TransformJobName=name, WaiterConfig={"Delay": 0.25, "MaxAttempts": 960}
    )
    job = sagemaker.describe_transform_job(TransformJobName=name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    body = s3.get_object(Bucket=bucket, Key="out/rows.csv.out")["Body"].read()
    assert body == b"NAP\n" * 4 + b"LAST\n"
