"""Requests and waits of the batch-transform end-to-end tests (the fixtures are in
tests/e2e/transform_fixtures.py)."""

from botocore.exceptions import WaiterError

# Two minutes, looked at four times a second: a job's end is seen a quarter of a second after it
# (the waiter's Delay is a float to botocore, whatever the model's default says).
WAIT = {"Delay": 0.25, "MaxAttempts": 480}


def transform_request(name: str, model: str, bucket: str, prefix: str = "in/", **overrides) -> dict:
    request = {
        "TransformJobName": name,
        "ModelName": model,
        "TransformInput": {
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/{prefix}"}},
            "ContentType": "text/csv",
            "SplitType": "Line",
        },
        "TransformOutput": {
            "S3OutputPath": f"s3://{bucket}/out/",
            "Accept": "text/csv",
            "AssembleWith": "Line",
        },
        "TransformResources": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and key in request:
            request[key] = {**request[key], **value}
        else:
            request[key] = value
    return request


def read_object(s3, bucket: str, key: str) -> str:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode()


def wait_for_transform(sagemaker, name: str) -> dict:
    try:
        sagemaker.get_waiter("transform_job_completed_or_stopped").wait(
            TransformJobName=name, WaiterConfig=WAIT
        )
    except WaiterError:
        pass  # a Failed job ends the waiter with an error: the test reads the job's reason
    return sagemaker.describe_transform_job(TransformJobName=name)
