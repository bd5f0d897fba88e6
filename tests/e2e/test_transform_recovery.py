"""A worker killed with SIGKILL while it runs a transform job: once a worker runs again, the job
is run again from the start (its lease lapses, the sweeper hands it on) and completes with every
`.out` whole."""

import time

from tests.e2e.conftest import unique_name

pytest_plugins = ["tests.e2e.hosting_fixtures", "tests.e2e.transform_fixtures"]  # transformer_image

GROUP = "/aws/sagemaker/TransformJobs"
# Each row a request of its own (SingleRecord); the model takes 2 s over a "nap", so the job is
# still sending when the worker is killed after the model's first request shows in its log.
ROWS = [b"nap"] * 3 + [b"last"]


def _requests_seen(logs, name: str) -> int:
    """The requests the model printed (tests/e2e/transform_probe/transformer.py), in CloudWatch;
    0 before the session's first transform output creates the log group."""
    pages = logs.get_paginator("filter_log_events").paginate(
        logGroupName=GROUP, logStreamNamePrefix=f"{name}/", filterPattern='"invocation content-type"'
    )
    try:
        return sum(len(page["events"]) for page in pages)
    except logs.exceptions.ResourceNotFoundException:
        return 0


def test_worker_killed_mid_transform_and_restarted_completes_the_job(
    stack, sagemaker, s3, bucket, transformer_image
):
    model = unique_name("transformer")
    sagemaker.create_model(ModelName=model, PrimaryContainer={"Image": transformer_image})
    s3.put_object(Bucket=bucket, Key="in/rows.csv", Body=b"".join(row + b"\n" for row in ROWS))
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
    logs = stack.client("logs")
    deadline = time.monotonic() + 60
    while not (before_kill := _requests_seen(logs, name)):
        assert time.monotonic() < deadline, "the model never got a request"
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
    assert body == b"".join(row.upper() + b"\n" for row in ROWS)
    # Run again from the start: past what it had seen before the kill (the dead run may have sent
    # one more meanwhile), the model saw every row again.
    assert _requests_seen(logs, name) >= before_kill + len(ROWS)
