"""CreateTransformJob's cross-field rules (API reference, CreateTransformJob.MaxPayloadInMB: "The
value of MaxPayloadInMB cannot be greater than 100 MB. If you specify the MaxConcurrentTransforms
parameter, the value of (MaxConcurrentTransforms * MaxPayloadInMB) also cannot exceed 100 MB"),
and what Sageport refuses rather than runs differently."""

import pytest

from batchtransform.requests import check_create_request
from protocol.errors import ValidationException


def _request(**overrides) -> dict:
    request = {
        "TransformJobName": "job",
        "ModelName": "model",
        "TransformInput": {"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/in/"}}},
        "TransformOutput": {"S3OutputPath": "s3://b/out/"},
        "TransformResources": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
    }
    request.update(overrides)
    return request


def test_a_plain_request_passes():
    check_create_request(_request(MaxPayloadInMB=100, MaxConcurrentTransforms=1))


@pytest.mark.parametrize("instance_type", ["ml.g4dn.xlarge", "ml.p3.2xlarge", "ml.g5.12xlarge"])
def test_accelerated_instance_types_are_accepted(instance_type):
    """SageMaker's TransformInstanceType enum lists ml.g4dn, ml.p3 and ml.g5 types: their GPUs are
    given to the transform containers."""
    check_create_request(_request(TransformResources={"InstanceType": instance_type, "InstanceCount": 1}))


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        ({"MaxPayloadInMB": 101}, "MaxPayloadInMB must be less than or equal to 100"),
        ({"MaxPayloadInMB": 20, "MaxConcurrentTransforms": 6}, "must not exceed 100 MB"),
        ({"DataCaptureConfig": {"DestinationS3Uri": "s3://b/c"}}, "DataCaptureConfig is not supported"),
        (
            {"TransformResources": {"InstanceType": "ml.zz9.xlarge", "InstanceCount": 1}},
            "TransformResources.InstanceType 'ml.zz9.xlarge' is not a known instance type.",
        ),
        (
            {
                "TransformInput": {
                    "DataSource": {
                        "S3DataSource": {"S3DataType": "AugmentedManifestFile", "S3Uri": "s3://b/m"}
                    }
                }
            },
            "S3DataType AugmentedManifestFile is not supported",
        ),
    ],
)
def test_refusals(overrides, said):
    with pytest.raises(ValidationException, match=said):
        check_create_request(_request(**overrides))
