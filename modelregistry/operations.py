"""SageMaker model registry operations: validate (the protocol layer did the shape), delegate."""

from modelregistry import presenters, services
from protocol.context import RequestContext
from protocol.registry import operation


@operation("CreateModelPackageGroup")
def create_model_package_group(ctx: RequestContext, params: dict) -> dict:
    return {"ModelPackageGroupArn": services.create_group(ctx, params).model_package_group_arn}


@operation("DescribeModelPackageGroup")
def describe_model_package_group(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_group(services.get_group(ctx, params["ModelPackageGroupName"]))


@operation("ListModelPackageGroups")
def list_model_package_groups(ctx: RequestContext, params: dict) -> dict:
    groups, next_token = services.list_groups(ctx, params)
    return {
        "ModelPackageGroupSummaryList": [presenters.group_summary(group) for group in groups],
        "NextToken": next_token,
    }


@operation("DeleteModelPackageGroup")
def delete_model_package_group(ctx: RequestContext, params: dict) -> dict:
    services.delete_group(ctx, params["ModelPackageGroupName"])
    return {}


@operation("CreateModelPackage")
def create_model_package(ctx: RequestContext, params: dict) -> dict:
    return {"ModelPackageArn": services.create_package(ctx, params).model_package_arn}


@operation("DescribeModelPackage")
def describe_model_package(ctx: RequestContext, params: dict) -> dict:
    return presenters.describe_package(services.get_package(ctx, params["ModelPackageName"]))


@operation("ListModelPackages")
def list_model_packages(ctx: RequestContext, params: dict) -> dict:
    packages, next_token = services.list_packages(ctx, params)
    return {
        "ModelPackageSummaryList": [presenters.package_summary(package) for package in packages],
        "NextToken": next_token,
    }


@operation("UpdateModelPackage")
def update_model_package(ctx: RequestContext, params: dict) -> dict:
    return {"ModelPackageArn": services.update_package(ctx, params).model_package_arn}


@operation("DeleteModelPackage")
def delete_model_package(ctx: RequestContext, params: dict) -> dict:
    services.delete_package(ctx, params["ModelPackageName"])
    return {}
