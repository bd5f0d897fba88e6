"""Serve the model examples/quickstart.py trained behind an endpoint, and ask it for a prediction.

Run from the repository root after examples/quickstart.py, with the stack up:
    source .sageport/env && .venv/bin/python examples/quickstart_endpoint.py
"""
import time

import boto3

sm = boto3.client("sagemaker")
runtime = boto3.client("sagemaker-runtime")  # AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME: the data plane

jobs = sm.list_training_jobs(NameContains="linear-", StatusEquals="Completed",
                             SortBy="CreationTime", SortOrder="Descending")["TrainingJobSummaries"]
job = sm.describe_training_job(TrainingJobName=jobs[0]["TrainingJobName"])  # the newest quick start

name = f"linear-{time.strftime('%Y%m%d-%H%M%S')}"
sm.create_model(
    ModelName=name,
    ExecutionRoleArn="arn:aws:iam::123456789012:role/SageMakerRole",
    PrimaryContainer={"Image": "sageport-examples/python-serve:latest",
                      "ModelDataUrl": job["ModelArtifacts"]["S3ModelArtifacts"]},
)
sm.create_endpoint_config(EndpointConfigName=name, ProductionVariants=[{
    "VariantName": "AllTraffic", "ModelName": name,
    "InstanceType": "ml.m5.large", "InitialInstanceCount": 1}])
sm.create_endpoint(EndpointName=name, EndpointConfigName=name)
# The waiter asks every 30 s by default; the container is up in a few seconds.
sm.get_waiter("endpoint_in_service").wait(EndpointName=name, WaiterConfig={"Delay": 2, "MaxAttempts": 300})

answer = runtime.invoke_endpoint(EndpointName=name, ContentType="text/csv", Body="1.5,-2\n")
print(name, answer["Body"].read().decode().strip())  # about 9.5: 2·1.5 − 3·(−2) + 0.5
