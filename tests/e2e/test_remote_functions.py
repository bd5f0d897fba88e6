"""The SageMaker Python SDK v2's `@remote` functions, unchanged: a call runs the function as a
training job in the image it names (Python 3.11 and the SDK: scripts/build-images.sh
python-sagemaker) and returns its value; an exception it raises is raised again in the caller
(the SDK reads both back from S3, where the job's invoke_function wrote them)."""

import pytest
from sagemaker.remote_function import remote

from tests.e2e.sdk import ROLE


def test_a_remote_function_returns_its_value_and_raises_its_exception_in_the_caller(
    stack, sdk_session, sagemaker, python_sagemaker_image
):
    options = {
        "image_uri": python_sagemaker_image,
        "instance_type": "ml.m5.large",
        "role": ROLE,
        "sagemaker_session": sdk_session,
    }

    @remote(**options)
    def divide(left: int, right: int) -> float:  # local: cloudpickle sends it by value
        return left / right

    assert divide(7, 2) == 3.5
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        divide(1, 0)
    jobs = sagemaker.list_training_jobs(NameContains="divide", SortBy="CreationTime", SortOrder="Descending")
    latest = jobs["TrainingJobSummaries"][0]["TrainingJobName"]
    failed = sagemaker.describe_training_job(TrainingJobName=latest)
    assert failed["FailureReason"] == "AlgorithmError: ZeroDivisionError('division by zero'), exit code: 1"
