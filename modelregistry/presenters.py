"""Response bodies of the registry, built explicitly from the rows (no reflection)."""

from modelregistry.models import ModelPackage, ModelPackageGroup
from protocol.search import in_shape

# SageMaker runs no validation or image scan here, so there is none to report (the member is
# required; a registered model version on SageMaker without ValidationSpecification answers the
# same empty lists).
STATUS_DETAILS = {"ValidationStatuses": [], "ImageScanStatuses": []}
# Nothing is pending: a group or package is usable as soon as it is created.
COMPLETED = "Completed"


def describe_group(group: ModelPackageGroup) -> dict:
    return {**group_summary(group), "CreatedBy": group.created_by}


def group_summary(group: ModelPackageGroup) -> dict:
    return {
        "ModelPackageGroupName": group.model_package_group_name,
        "ModelPackageGroupArn": group.model_package_group_arn,
        "ModelPackageGroupDescription": group.description or None,
        "CreationTime": group.creation_time,
        "ModelPackageGroupStatus": COMPLETED,
        "ManagedConfiguration": group.managed_configuration,
    }


def describe_package(package: ModelPackage) -> dict:
    body = dict(package.request)
    body.update(
        ModelPackageName=package.model_package_name,
        ModelPackageGroupName=package.model_package_name if package.is_versioned else None,
        ModelPackageVersion=package.model_package_version,
        ModelPackageArn=package.model_package_arn,
        CreationTime=package.creation_time,
        ModelPackageStatus=COMPLETED,
        ModelPackageStatusDetails=STATUS_DETAILS,
        ModelApprovalStatus=package.model_approval_status or None,
        ApprovalDescription=package.approval_description or None,
        CustomerMetadataProperties=package.customer_metadata_properties or None,
        CreatedBy=package.created_by,
        LastModifiedTime=package.last_modified_time,
        LastModifiedBy=package.last_modified_by,
    )
    return body


def package_summary(package: ModelPackage) -> dict:
    """A versioned package's summary has no ModelPackageName (what SageMaker answers: SDK v3 issue
    5606, `ListModelPackages` "does not return ModelPackageName" for versions)."""
    return {
        "ModelPackageName": None if package.is_versioned else package.model_package_name,
        "ModelPackageGroupName": package.model_package_name if package.is_versioned else None,
        "ModelPackageVersion": package.model_package_version,
        "ModelPackageArn": package.model_package_arn,
        "ModelPackageDescription": package.request.get("ModelPackageDescription"),
        "CreationTime": package.creation_time,
        "ModelPackageStatus": COMPLETED,
        "ModelApprovalStatus": package.model_approval_status or None,
        "ModelLifeCycle": package.request.get("ModelLifeCycle"),
        "ModelPackageRegistrationType": package.request.get("ModelPackageRegistrationType"),
    }


def package_record(package: ModelPackage, tags: list[dict]) -> dict:
    """Search's `ModelPackage` record: what Describe answers, with the tags, in its shape."""
    return in_shape("ModelPackage", {**describe_package(package), "Tags": tags})


def group_record(group: ModelPackageGroup) -> dict:
    return in_shape("ModelPackageGroup", {**describe_group(group), "Tags": group.tags})

