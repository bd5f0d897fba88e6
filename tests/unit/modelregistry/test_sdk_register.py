"""The SDK v2's `Model.register()` (sagemaker/session.py `get_create_model_package_request`: it
always sends CertifyForMarketplace and SkipModelValidation, and ModelApprovalStatus when given)
is accepted as it is and described back as registered."""

import boto3
import sagemaker as sagemaker_sdk

from tests.unit.modelregistry.test_registry_api import ACCOUNT, sagemaker  # noqa: F401  (fixture)
from tests.unit.protocol.conftest import REGION, access_key, make_client  # noqa: F401  (fixtures)


def test_model_register_creates_the_group_s_next_version(sagemaker):  # noqa: F811
    boto_session = boto3.Session(region_name=REGION)
    session = sagemaker_sdk.Session(boto_session=boto_session, sagemaker_client=sagemaker)
    sagemaker.create_model_package_group(ModelPackageGroupName="churn")
    model = sagemaker_sdk.Model(
        image_uri="example/serve:1",
        model_data="s3://bucket/model.tar.gz",
        role=f"arn:aws:iam::{ACCOUNT}:role/SageMakerRole",
        sagemaker_session=session,
    )

    package = model.register(
        content_types=["text/csv"],
        response_types=["text/csv"],
        inference_instances=["ml.m5.large"],
        transform_instances=["ml.m5.large"],
        model_package_group_name="churn",
        approval_status="Approved",
        customer_metadata_properties={"owner": "risk"},
    )

    described = sagemaker.describe_model_package(ModelPackageName=package.model_package_arn)
    assert described["ModelPackageVersion"] == 1
    assert described["ModelApprovalStatus"] == "Approved"
    assert described["CustomerMetadataProperties"] == {"owner": "risk"}
    assert described["InferenceSpecification"]["Containers"][0]["ModelDataUrl"] == "s3://bucket/model.tar.gz"
