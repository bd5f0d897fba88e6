"""Checks on registry requests that the botocore shapes cannot express.

The shape validation has already run; these are the cross-field rules SageMaker applies and the
members whose behaviour Sageport does not carry out (refused, never silently ignored), each a
ValidationException whose text says what to change."""

from protocol.errors import ValidationException

# CreateModelPackage members that ask SageMaker to do something Sageport does not do.
UNSUPPORTED_PACKAGE_MEMBERS = {
    "ValidationSpecification": "validation transform jobs are not run",
    "SourceAlgorithmSpecification": "algorithm resources are not served: give InferenceSpecification",
    "SecurityConfig": "model package encryption with a KMS key is not available",
}


def check_create_model_package(params: dict) -> None:
    """SageMaker's own words for the name rules (moto's record of the real service, PR 7165), and
    the documented ones: Tags belong to the group of a versioned package (API reference,
    CreateModelPackage: Tags), CertifyForMarketplace does not apply to versioned packages."""
    versioned = "ModelPackageGroupName" in params
    if versioned and "ModelPackageName" in params:
        raise ValidationException(
            "Both ModelPackageName and ModelPackageGroupName are provided in the input. "
            "Cannot determine which one to use."
        )
    if not versioned and "ModelPackageName" not in params:
        raise ValidationException("Missing ARN.")
    problems = [
        f"{member} is not supported by Sageport: {why}."
        for member, why in UNSUPPORTED_PACKAGE_MEMBERS.items()
        if member in params
    ]
    if params.get("CertifyForMarketplace"):
        problems.append(
            "CertifyForMarketplace is not supported by Sageport: there is no marketplace to list on."
        )
    if versioned and "Tags" in params:
        problems.append(
            "Tags cannot be given for a versioned model package: it uses the tags of its model "
            "package group."
        )
    if problems:
        raise ValidationException(" ".join(problems))


def check_update_model_package(params: dict) -> None:
    """A key can be set or removed in one call, not both."""
    given = set(params.get("CustomerMetadataProperties", {}))
    both = sorted(given & set(params.get("CustomerMetadataPropertiesToRemove", [])))
    if both:
        raise ValidationException(
            f"CustomerMetadataProperties and CustomerMetadataPropertiesToRemove both name: {', '.join(both)}."
        )
