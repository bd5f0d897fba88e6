"""The model registry through a real boto3 client (tests/unit/protocol/conftest.py): versions
numbered in their group, the filters and order of the List operations, approval updates, and the
errors in SageMaker's words. Each expectation cites where SageMaker documents or shows it."""

import datetime

import pytest
from botocore.exceptions import ClientError

from tests.unit.protocol.conftest import REGION, access_key, make_client  # noqa: F401  (fixtures)

ACCOUNT = "210987654321"
PREFIX = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}"
SPEC = {
    "Containers": [{"Image": "example/serve:1", "ModelDataUrl": "s3://bucket/model.tar.gz"}],
    "SupportedContentTypes": ["text/csv"],
    "SupportedResponseMIMETypes": ["text/csv"],
}


@pytest.fixture
def sagemaker(make_client):  # noqa: F811
    client, _ = make_client()
    return client


def error_of(raised) -> tuple[str, str]:
    error = raised.value.response["Error"]
    return error["Code"], error["Message"]


def register(sagemaker, group: str, **extra) -> str:
    return sagemaker.create_model_package(ModelPackageGroupName=group, InferenceSpecification=SPEC, **extra)[
        "ModelPackageArn"
    ]


def test_packages_of_a_group_are_numbered_from_one_and_never_reuse_a_version(sagemaker):
    # ARN `model-package/<group>/<version>` (CreateModelPackage output shape, ModelPackageArn);
    # a deleted version's number is not given again.
    sagemaker.create_model_package_group(ModelPackageGroupName="Churn")
    first, second = register(sagemaker, "Churn"), register(sagemaker, "Churn")
    sagemaker.delete_model_package(ModelPackageName=second)
    third = register(sagemaker, "Churn")

    assert (first, second, third) == tuple(f"{PREFIX}:model-package/churn/{n}" for n in (1, 2, 3))
    described = sagemaker.describe_model_package(ModelPackageName=third)
    assert described["ModelPackageName"] == "Churn"
    assert described["ModelPackageGroupName"] == "Churn"
    assert described["ModelPackageVersion"] == 3
    assert described["ModelApprovalStatus"] == "PendingManualApproval"
    assert described["ModelPackageStatus"] == "Completed"
    assert described["InferenceSpecification"] == SPEC


def test_a_package_is_described_by_arn_by_group_and_version_and_an_unversioned_one_by_name(sagemaker):
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    arn = register(sagemaker, "g")
    sagemaker.create_model_package(ModelPackageName="solo", InferenceSpecification=SPEC)

    assert sagemaker.describe_model_package(ModelPackageName="g/1")["ModelPackageArn"] == arn
    solo = sagemaker.describe_model_package(ModelPackageName=f"{PREFIX}:model-package/solo")
    assert solo["ModelPackageName"] == "solo" and "ModelPackageGroupName" not in solo
    assert "ModelPackageVersion" not in solo


def test_missing_groups_and_packages_are_validation_exceptions_naming_their_arn(sagemaker):
    # `ModelPackageGroup arn:… does not exist.` (the ACK sagemaker-controller matches its suffix);
    # CreateModelPackage: `Model Package Group does not exist.` (amazon-sagemaker-examples compare it).
    with pytest.raises(ClientError) as raised:
        sagemaker.describe_model_package_group(ModelPackageGroupName="Nope")
    assert error_of(raised) == (
        "ValidationException",
        f"ModelPackageGroup {PREFIX}:model-package-group/nope does not exist.",
    )
    with pytest.raises(ClientError) as raised:
        register(sagemaker, "Nope")
    assert error_of(raised) == ("ValidationException", "Model Package Group does not exist.")
    with pytest.raises(ClientError) as raised:
        sagemaker.describe_model_package(ModelPackageName="nope/4")
    assert error_of(raised) == (
        "ValidationException",
        f"ModelPackage {PREFIX}:model-package/nope/4 does not exist.",
    )


def test_another_account_s_arn_names_nothing(sagemaker):
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    foreign = f"arn:aws:sagemaker:{REGION}:123456789012:model-package-group/g"

    with pytest.raises(ClientError) as raised:
        sagemaker.describe_model_package_group(ModelPackageGroupName=foreign)
    assert error_of(raised)[0] == "ValidationException"


def test_a_group_keeps_its_description_and_managed_configuration(sagemaker):
    sagemaker.create_model_package_group(
        ModelPackageGroupName="g",
        ModelPackageGroupDescription="churn models",
        ManagedConfiguration={"ManagedStorageType": "Restricted"},
    )
    described = sagemaker.describe_model_package_group(ModelPackageGroupName="g")
    assert described["ModelPackageGroupDescription"] == "churn models"
    assert described["ManagedConfiguration"] == {"ManagedStorageType": "Restricted"}


def test_a_group_name_is_taken_once_whatever_its_case(sagemaker):
    sagemaker.create_model_package_group(ModelPackageGroupName="Fraud")
    with pytest.raises(ClientError) as raised:
        sagemaker.create_model_package_group(ModelPackageGroupName="FRAUD")
    assert error_of(raised) == (
        "ValidationException",
        f"Model Package Group already exists: {PREFIX}:model-package-group/fraud",
    )


def test_a_group_with_packages_cannot_be_deleted_until_they_are(sagemaker):
    # DeleteModelPackageGroup models one error: ConflictException (botocore service-2.json).
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    arn = register(sagemaker, "g")
    with pytest.raises(ClientError) as raised:
        sagemaker.delete_model_package_group(ModelPackageGroupName="g")
    assert error_of(raised)[0] == "ConflictException"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400

    sagemaker.delete_model_package(ModelPackageName=arn)
    sagemaker.delete_model_package_group(ModelPackageGroupName="g")
    assert sagemaker.list_model_package_groups()["ModelPackageGroupSummaryList"] == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        # moto PR 7165 records the real service's words for these two.
        (
            {"ModelPackageName": "a", "ModelPackageGroupName": "g"},
            "Both ModelPackageName and ModelPackageGroupName are provided in the input. "
            "Cannot determine which one to use.",
        ),
        ({}, "Missing ARN."),
        # API reference, CreateModelPackage Tags: "you cannot supply a tag argument" with a group.
        (
            {"ModelPackageGroupName": "g", "Tags": [{"Key": "k", "Value": "v"}]},
            "Tags cannot be given for a versioned model package: "
            "it uses the tags of its model package group.",
        ),
    ],
)
def test_create_model_package_refuses_what_sagemaker_refuses(sagemaker, params, message):
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    with pytest.raises(ClientError) as raised:
        sagemaker.create_model_package(InferenceSpecification=SPEC, **params)
    assert error_of(raised) == ("ValidationException", message)


def test_list_model_packages_lists_unversioned_packages_unless_told_otherwise(sagemaker):
    # ModelPackageType "UNVERSIONED … is the default value" (ListModelPackages documentation;
    # boto3 issue 3069: the service keeps that default); naming a group lists its versions.
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    register(sagemaker, "g")
    sagemaker.create_model_package(ModelPackageName="solo", InferenceSpecification=SPEC)

    def arns(**params):
        return [
            s["ModelPackageArn"] for s in sagemaker.list_model_packages(**params)["ModelPackageSummaryList"]
        ]

    assert arns() == [f"{PREFIX}:model-package/solo"]
    assert arns(ModelPackageGroupName="g") == [f"{PREFIX}:model-package/g/1"]
    assert arns(ModelPackageType="Versioned") == [f"{PREFIX}:model-package/g/1"]
    assert sorted(arns(ModelPackageType="Both")) == [
        f"{PREFIX}:model-package/g/1",
        f"{PREFIX}:model-package/solo",
    ]
    version = sagemaker.list_model_packages(ModelPackageGroupName="g")["ModelPackageSummaryList"][0]
    # A version's summary carries its group and number, not a name (SDK v3 issue 5606).
    assert "ModelPackageName" not in version
    assert (version["ModelPackageGroupName"], version["ModelPackageVersion"]) == ("g", 1)


def test_list_model_packages_filters_by_approval_and_time_and_sorts_and_pages(sagemaker):
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    before = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
    for status in ("Approved", "Rejected", "Approved"):
        register(sagemaker, "g", ModelApprovalStatus=status)

    approved = sagemaker.list_model_packages(ModelPackageGroupName="g", ModelApprovalStatus="Approved")
    assert [s["ModelPackageVersion"] for s in approved["ModelPackageSummaryList"]] == [1, 3]
    # The default order is CreationTime Ascending (ListModelPackages SortBy/SortOrder documentation).
    newest_first = sagemaker.list_model_packages(ModelPackageGroupName="g", SortOrder="Descending")
    assert [s["ModelPackageVersion"] for s in newest_first["ModelPackageSummaryList"]] == [3, 2, 1]
    assert (
        sagemaker.list_model_packages(ModelPackageGroupName="g", CreationTimeBefore=before)[
            "ModelPackageSummaryList"
        ]
        == []
    )
    page = sagemaker.list_model_packages(ModelPackageGroupName="g", MaxResults=2)
    rest = sagemaker.list_model_packages(ModelPackageGroupName="g", MaxResults=2, NextToken=page["NextToken"])
    assert [
        s["ModelPackageVersion"] for s in page["ModelPackageSummaryList"] + rest["ModelPackageSummaryList"]
    ] == [1, 2, 3]
    assert "NextToken" not in rest


def test_list_model_package_groups_filters_by_name_and_sorts(sagemaker):
    for name in ("beta-model", "alpha-model", "other"):
        sagemaker.create_model_package_group(ModelPackageGroupName=name)

    listed = sagemaker.list_model_package_groups(NameContains="MODEL", SortBy="Name")
    assert [g["ModelPackageGroupName"] for g in listed["ModelPackageGroupSummaryList"]] == [
        "alpha-model",
        "beta-model",
    ]
    assert listed["ModelPackageGroupSummaryList"][0]["ModelPackageGroupStatus"] == "Completed"
    shared = sagemaker.list_model_package_groups(CrossAccountFilterOption="CrossAccount")
    assert shared["ModelPackageGroupSummaryList"] == []


def test_update_model_package_approves_and_edits_customer_metadata(sagemaker):
    # UpdateModelPackage: ModelApprovalStatus with ApprovalDescription, CustomerMetadataProperties
    # merged and CustomerMetadataPropertiesToRemove removed (its input shape).
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    arn = register(sagemaker, "g", CustomerMetadataProperties={"owner": "ana", "stage": "dev"})

    sagemaker.update_model_package(
        ModelPackageArn=arn,
        ModelApprovalStatus="Approved",
        ApprovalDescription="beats v0 on AUC",
        CustomerMetadataProperties={"stage": "prod"},
        CustomerMetadataPropertiesToRemove=["owner"],
    )

    described = sagemaker.describe_model_package(ModelPackageName=arn)
    assert described["ModelApprovalStatus"] == "Approved"
    assert described["ApprovalDescription"] == "beats v0 on AUC"
    assert described["CustomerMetadataProperties"] == {"stage": "prod"}
    assert described["LastModifiedTime"] >= described["CreationTime"]
    assert described["LastModifiedBy"]["IamIdentity"]["Arn"].startswith(
        f"arn:aws:sts::{ACCOUNT}:assumed-role/"
    )


def test_a_package_s_foreign_s3_locations_are_refused_at_create(sagemaker):
    # The tenancy rule of every operation (accounts/s3_tenancy): ModelDataUrl and ModelMetrics.
    from accounts import buckets

    buckets.claim("someone-elses", "123456789012")
    spec = {"Containers": [{"Image": "i", "ModelDataUrl": "s3://someone-elses/model.tar.gz"}]}
    metrics = {
        "ModelQuality": {
            "Statistics": {"ContentType": "application/json", "S3Uri": "s3://someone-elses/m.json"}
        }
    }
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    for params in (
        {"InferenceSpecification": spec},
        {"InferenceSpecification": SPEC, "ModelMetrics": metrics},
    ):
        with pytest.raises(ClientError) as raised:
            sagemaker.create_model_package(ModelPackageGroupName="g", **params)
        assert error_of(raised)[0] == "ValidationException"
    assert sagemaker.list_model_packages(ModelPackageGroupName="g")["ModelPackageSummaryList"] == []


def test_tags_of_groups_and_unversioned_packages(sagemaker):
    group = sagemaker.create_model_package_group(
        ModelPackageGroupName="g", Tags=[{"Key": "team", "Value": "risk"}]
    )["ModelPackageGroupArn"]
    solo = sagemaker.create_model_package(
        ModelPackageName="solo", InferenceSpecification=SPEC, Tags=[{"Key": "k", "Value": "v"}]
    )["ModelPackageArn"]

    assert sagemaker.list_tags(ResourceArn=group)["Tags"] == [{"Key": "team", "Value": "risk"}]
    assert sagemaker.list_tags(ResourceArn=solo)["Tags"] == [{"Key": "k", "Value": "v"}]


def test_a_client_token_makes_create_model_package_idempotent(sagemaker):
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    first = register(sagemaker, "g", ClientToken="retry-1")
    assert register(sagemaker, "g", ClientToken="retry-1") == first
    assert register(sagemaker, "g") == f"{PREFIX}:model-package/g/2"


def test_create_model_from_a_package_runs_its_container(sagemaker):
    # ContainerDefinition.ModelPackageName: the model is the package's image and model data, the
    # request's Environment over the package's.
    container = {"Image": "example/serve:1", "ModelDataUrl": "s3://bucket/model.tar.gz"}
    spec = {"Containers": [{**container, "Environment": {"A": "package", "B": "package"}}]}
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    arn = sagemaker.create_model_package(ModelPackageGroupName="g", InferenceSpecification=spec)[
        "ModelPackageArn"
    ]

    sagemaker.create_model(
        ModelName="from-package",
        ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/SageMakerRole",
        PrimaryContainer={"ModelPackageName": arn, "Environment": {"B": "model"}},
    )

    container = sagemaker.describe_model(ModelName="from-package")["PrimaryContainer"]
    assert container["Image"] == "example/serve:1"
    assert container["ModelDataUrl"] == "s3://bucket/model.tar.gz"
    assert container["Environment"] == {"A": "package", "B": "model"}
    assert container["ModelPackageName"] == arn


@pytest.mark.parametrize(
    ("container", "message"),
    [
        ({"ModelPackageName": "g/9"}, f"ModelPackage {PREFIX}:model-package/g/9 does not exist."),
        (
            {"ModelPackageName": "g/1", "Image": "x"},
            "Container Image cannot be given with ModelPackageName: the model package gives it.",
        ),
    ],
)
def test_create_model_from_a_package_refuses_a_missing_package_or_a_second_image(
    sagemaker, container, message
):
    sagemaker.create_model_package_group(ModelPackageGroupName="g")
    register(sagemaker, "g")
    with pytest.raises(ClientError) as raised:
        sagemaker.create_model(
            ModelName="m",
            ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/SageMakerRole",
            PrimaryContainer=container,
        )
    assert error_of(raised) == ("ValidationException", message)
