"""DescribeTrainingJob and DescribeModel return the members SageMaker fills in although nobody set
them; clients read some of them unguarded (the SDK's `Estimator.attach`)."""
import pytest
from sagemaker.estimator import Estimator

from hosting.models import SageMakerModel
from hosting.presenters import describe_model
from tests.unit.training.test_scheduler import make_job
from training.presenters import describe_training_job
from training.requests import with_defaults

pytestmark = pytest.mark.django_db


def described(**request) -> dict:
    request = {
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
        "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
        **request,
    }
    job = make_job("ml.m5.large", **request)
    job.request = with_defaults({"TrainingJobName": job.training_job_name, **job.request})
    job.request["ResourceConfig"]["VolumeSizeInGB"] = 10
    return describe_training_job(job)


def test_describe_training_job_fills_in_what_sagemaker_returns_by_default():
    job = described()

    assert job["OutputDataConfig"] == {
        "KmsKeyId": "", "S3OutputPath": "s3://bucket/out", "CompressionType": "GZIP"
    }
    assert job["AlgorithmSpecification"]["EnableSageMakerMetricsTimeSeries"] is False
    assert job["EnableNetworkIsolation"] is False
    assert job["EnableInterContainerTrafficEncryption"] is False
    assert job["EnableManagedSpotTraining"] is False
    assert job["ProfilingStatus"] == "Disabled"


def test_describe_training_job_keeps_what_the_request_set():
    job = described(
        OutputDataConfig={"S3OutputPath": "s3://bucket/out", "KmsKeyId": "alias/mine"},
        ProfilerConfig={"S3OutputPath": "s3://bucket/profiler"},
    )

    assert job["OutputDataConfig"]["KmsKeyId"] == "alias/mine"
    assert job["ProfilingStatus"] == "Enabled"


def test_the_sdks_attach_reads_a_described_job_without_a_key_error():
    init_params = Estimator._prepare_init_params_from_job_description(described())

    assert init_params["output_kms_key"] == ""
    assert init_params["output_path"] == "s3://bucket/out"
    assert init_params["enable_network_isolation"] is False


def test_describe_model_fills_in_network_isolation_and_the_container_mode():
    model = SageMakerModel(
        model_name="m",
        model_arn="arn:aws:sagemaker:us-east-1:123456789012:model/m",
        request={"ModelName": "m", "PrimaryContainer": {"Image": "serve:latest"}},
    )

    body = describe_model(model)

    assert body["EnableNetworkIsolation"] is False
    assert body["PrimaryContainer"] == {"Mode": "SingleModel", "Image": "serve:latest"}
