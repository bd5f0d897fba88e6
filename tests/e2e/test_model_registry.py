"""The model registry against the live stack: boto3 for the API (groups, versions, approval,
errors as SageMaker words them) and the SDK v2's `ModelPackage(...).deploy()`, which registers
nothing itself but describes the package, approves it, creates a model from its ARN and serves it."""

import json
import uuid

import pytest
from botocore.exceptions import ClientError
from sagemaker import ModelPackage

from tests.e2e.conftest import unique_name
from tests.e2e.hosting import INSTANCE_TYPE, NO_RETRIES, wait_for_endpoint
from tests.e2e.sdk import ROLE
from tests.tar_archives import tar_gz

pytest_plugins = ["tests.e2e.hosting_fixtures"]


def test_a_group_s_versions_are_registered_approved_listed_and_deleted(sagemaker):
    group = unique_name("churn")
    spec = {"Containers": [{"Image": "example/serve:1"}], "SupportedContentTypes": ["text/csv"]}
    group_arn = sagemaker.create_model_package_group(
        ModelPackageGroupName=group, ModelPackageGroupDescription="churn models"
    )["ModelPackageGroupArn"]
    arns = [
        sagemaker.create_model_package(ModelPackageGroupName=group, InferenceSpecification=spec)[
            "ModelPackageArn"
        ]
        for _ in range(2)
    ]
    try:
        assert arns == [group_arn.replace("model-package-group/", "model-package/") + f"/{n}" for n in (1, 2)]
        described = sagemaker.describe_model_package_group(ModelPackageGroupName=group)
        assert (described["ModelPackageGroupStatus"], described["ModelPackageGroupDescription"]) == (
            "Completed",
            "churn models",
        )

        sagemaker.update_model_package(
            ModelPackageArn=arns[1], ModelApprovalStatus="Approved", ApprovalDescription="better AUC"
        )
        approved = sagemaker.list_model_packages(ModelPackageGroupName=group, ModelApprovalStatus="Approved")
        assert [s["ModelPackageArn"] for s in approved["ModelPackageSummaryList"]] == [arns[1]]
        pending = sagemaker.describe_model_package(ModelPackageName=arns[0])
        assert pending["ModelApprovalStatus"] == "PendingManualApproval"

        # DeleteModelPackageGroup's modelled error while versions remain (botocore service-2.json).
        with pytest.raises(ClientError) as raised:
            sagemaker.delete_model_package_group(ModelPackageGroupName=group)
        assert raised.value.response["Error"]["Code"] == "ConflictException"
    finally:
        for arn in arns:
            sagemaker.delete_model_package(ModelPackageName=arn)
        sagemaker.delete_model_package_group(ModelPackageGroupName=group)

    with pytest.raises(ClientError) as raised:
        sagemaker.describe_model_package_group(ModelPackageGroupName=group)
    assert raised.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": f"ModelPackageGroup {group_arn} does not exist.",
    }


def test_a_package_naming_another_account_s_bucket_is_refused(sagemaker, stack):
    """The tenancy rule of every operation (accounts/s3_tenancy): the model data and the metrics
    reports of a package are read later, so they must be the caller's account's at create."""
    other = str(uuid.uuid4().int)[:12]
    key_id, secret = stack.create_access_key(other)
    foreign = f"theirs-{uuid.uuid4().hex[:10]}"
    stack.client("s3", aws_access_key_id=key_id, aws_secret_access_key=secret).create_bucket(Bucket=foreign)
    group = unique_name("tenancy")
    sagemaker.create_model_package_group(ModelPackageGroupName=group)
    report = {"ContentType": "application/json", "S3Uri": f"s3://{foreign}/metrics.json"}
    requests = [
        {
            "InferenceSpecification": {
                "Containers": [{"Image": "i", "ModelDataUrl": f"s3://{foreign}/m.tar.gz"}]
            }
        },
        {"ModelMetrics": {"ModelQuality": {"Statistics": report}}},
    ]
    try:
        for request in requests:
            with pytest.raises(ClientError) as raised:
                sagemaker.create_model_package(ModelPackageGroupName=group, **request)
            assert raised.value.response["Error"]["Code"] == "ValidationException"
            assert foreign in raised.value.response["Error"]["Message"]
        assert sagemaker.list_model_packages(ModelPackageGroupName=group)["ModelPackageSummaryList"] == []
    finally:
        sagemaker.delete_model_package_group(ModelPackageGroupName=group)


def test_the_sdk_deploys_a_registered_model_package(sdk_session, sagemaker, s3, bucket, probe_image, stack):
    """SDK v2 `ModelPackage(role, model_package_arn=…).deploy()` (sagemaker/model.py): it describes
    the package, approves an unapproved version, and creates the model with
    `PrimaryContainer.ModelPackageName`; the endpoint runs the package's image on its model data
    with its Environment."""
    s3.put_object(Bucket=bucket, Key="registry/model.tar.gz", Body=tar_gz({"weights.txt": b"42"}))
    group = unique_name("registered")
    sagemaker.create_model_package_group(ModelPackageGroupName=group)
    container = {
        "Image": probe_image,
        "ModelDataUrl": f"s3://{bucket}/registry/model.tar.gz",
        "Environment": {"PROBE_TAG": "from-the-registry"},
    }
    arn = sagemaker.create_model_package(
        ModelPackageGroupName=group,
        InferenceSpecification={"Containers": [container], "SupportedContentTypes": ["application/json"]},
    )["ModelPackageArn"]
    endpoint = unique_name("registered")
    try:
        ModelPackage(role=ROLE, model_package_arn=arn, sagemaker_session=sdk_session).deploy(
            initial_instance_count=1, instance_type=INSTANCE_TYPE, endpoint_name=endpoint
        )
        wait_for_endpoint(sagemaker, endpoint)
        answer = stack.client("sagemaker-runtime", config=NO_RETRIES).invoke_endpoint(
            EndpointName=endpoint, Body=b"{}", ContentType="application/json"
        )
        report = json.loads(answer["Body"].read())
        assert report["tag"] == "from-the-registry"
        assert report["model_files"] == ["weights.txt"]
        assert sagemaker.describe_model_package(ModelPackageName=arn)["ModelApprovalStatus"] == "Approved"
    finally:
        try:
            sagemaker.delete_endpoint(EndpointName=endpoint)
            sagemaker.get_waiter("endpoint_deleted").wait(
                EndpointName=endpoint, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
            )
        except ClientError as error:
            if "Could not find endpoint" not in str(error):
                raise
        sagemaker.delete_model_package(ModelPackageName=arn)
        sagemaker.delete_model_package_group(ModelPackageGroupName=group)
