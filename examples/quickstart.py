"""Train the example linear regression on Sageport with plain boto3.

Run from the repository root, after `make images` and with the stack up:
    source .sageport/env && .venv/bin/python examples/quickstart.py
"""
import time

import boto3

sm = boto3.client("sagemaker")  # AWS_ENDPOINT_URL_SAGEMAKER points it at Sageport
s3 = boto3.client("s3")  # AWS_ENDPOINT_URL_S3: the bundled S3
try:
    s3.create_bucket(Bucket="my-data")
except (s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
    pass  # a second run
s3.upload_file("examples/linear_regression/train.csv", "my-data", "linear/train.csv")

name = f"linear-{time.strftime('%Y%m%d-%H%M%S')}"
sm.create_training_job(
    TrainingJobName=name,
    AlgorithmSpecification={"TrainingImage": "sageport-examples/python:latest", "TrainingInputMode": "File"},
    RoleArn="arn:aws:iam::123456789012:role/SageMakerRole",
    InputDataConfig=[{"ChannelName": "train", "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": "s3://my-data/linear/"}}}],
    OutputDataConfig={"S3OutputPath": "s3://my-data/output"},
    ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 10},
    StoppingCondition={"MaxRuntimeInSeconds": 3600},
)
# The waiter asks every 120 s by default: a job of a few seconds would wait two minutes.
sm.get_waiter("training_job_completed_or_stopped").wait(
    TrainingJobName=name, WaiterConfig={"Delay": 2, "MaxAttempts": 900}
)
job = sm.describe_training_job(TrainingJobName=name)
print(name, job["TrainingJobStatus"], job.get("ModelArtifacts", {}).get("S3ModelArtifacts", ""))
