"""Mutations and queries of model package groups and model packages, scoped to the caller's
account and region. The error texts are SageMaker's where the real service's are on record
(docs/model-registry.md lists them)."""

from django.db import IntegrityError, transaction
from django.db.models import F, ProtectedError, QuerySet
from django.utils import timezone

from identity.principals import caller
from modelregistry import names, presenters, requests
from modelregistry.models import ModelApprovalStatus, ModelPackage, ModelPackageGroup
from protocol.context import RequestContext
from protocol.errors import ConflictException, UnrecognizedClient, ValidationException
from protocol.listing import filtered_and_sorted
from protocol.pagination import paginate

# CreateModelPackage: "This parameter is optional for versioned models" (PendingManualApproval
# when left out, as the API reference's ModelApprovalStatus and the SDK's register() say).
DEFAULT_APPROVAL_STATUS = ModelApprovalStatus.PENDING_MANUAL_APPROVAL
SORT_FIELDS_GROUPS = {"Name": "model_package_group_name", "CreationTime": "creation_time"}
SORT_FIELDS_PACKAGES = {"Name": "model_package_name", "CreationTime": "creation_time"}
# What a package row keeps apart from the request it was created with.
_COLUMN_MEMBERS = (
    "ModelPackageName", "ModelPackageGroupName", "Tags", "ModelApprovalStatus",
    "CustomerMetadataProperties", "ClientToken",
)


def _scoped(model, ctx: RequestContext) -> QuerySet:
    return model.objects.filter(account_id=ctx.account_id, region=ctx.region)


def _user_context(ctx: RequestContext) -> dict:
    """CreatedBy / LastModifiedBy (`UserContext`): the IAM identity of the caller's key; none
    (every member is optional) when no access key made the call (a console operator's action)."""
    try:
        who = caller(ctx)
    except UnrecognizedClient:
        return {}
    return {"IamIdentity": {"Arn": who.arn, "PrincipalId": who.user_id}}


# --- Groups ----------------------------------------------------------------------------------


def create_group(ctx: RequestContext, params: dict) -> ModelPackageGroup:
    name = params["ModelPackageGroupName"]
    arn = names.group_arn(ctx, name)
    try:
        with transaction.atomic():
            return ModelPackageGroup.objects.create(
                account_id=ctx.account_id,
                region=ctx.region,
                model_package_group_name=name,
                model_package_group_arn=arn,
                description=params.get("ModelPackageGroupDescription", ""),
                managed_configuration=params.get("ManagedConfiguration"),
                tags=params.get("Tags", []),
                created_by=_user_context(ctx),
                creation_time=timezone.now(),
            )
    except IntegrityError:
        # The real service's words ("Model Package Group already exists"), with the ARN.
        raise ValidationException(f"Model Package Group already exists: {arn}") from None


def get_group(ctx: RequestContext, given: str) -> ModelPackageGroup:
    group = _find_group(ctx, given)
    if group is None:
        # As SageMaker answers DescribeModelPackageGroup for a missing group (the ACK
        # sagemaker-controller reads the message's "does not exist." to tell it apart).
        arn = given.lower() if given.startswith("arn:") else names.group_arn(ctx, given)
        raise ValidationException(f"ModelPackageGroup {arn} does not exist.")
    return group


def _find_group(ctx: RequestContext, given: str) -> ModelPackageGroup | None:
    found = names.named(ctx, given, names.GROUP_TYPE)
    if found is None or found.version is not None:
        return None
    arn = names.group_arn(ctx, found.name)
    return _scoped(ModelPackageGroup, ctx).filter(model_package_group_arn=arn).first()


def delete_group(ctx: RequestContext, given: str) -> None:
    """Only an empty group: its packages' foreign key protects it, so a version registered while
    the group is being deleted keeps it too."""
    group = get_group(ctx, given)
    try:
        with transaction.atomic():
            group.delete()
    except ProtectedError as error:
        raise ConflictException(
            f"Model Package Group {group.model_package_group_arn} cannot be deleted while it has "
            f"model packages ({len(error.protected_objects)}): delete them first."
        ) from None


def list_groups(ctx: RequestContext, params: dict) -> tuple[list[ModelPackageGroup], str | None]:
    rows = _scoped(ModelPackageGroup, ctx)
    if params.get("CrossAccountFilterOption") == "CrossAccount":
        rows = rows.none()  # no account shares groups with another here (no resource policies)
    rows = filtered_and_sorted(
        rows,
        params,
        operation="ListModelPackageGroups",
        name_field="model_package_group_name",
        sort_fields=SORT_FIELDS_GROUPS,
    )
    return paginate(rows, params.get("NextToken"), params.get("MaxResults"))


# --- Packages --------------------------------------------------------------------------------


def create_package(ctx: RequestContext, params: dict) -> ModelPackage:
    requests.check_create_model_package(params)
    token = params.get("ClientToken", "")
    if token:
        earlier = _scoped(ModelPackage, ctx).filter(client_token=token).first()
        if earlier is not None:  # the same call made again: the same package
            return earlier
    now = timezone.now()
    fields = {
        "account_id": ctx.account_id,
        "region": ctx.region,
        "request": {key: value for key, value in params.items() if key not in _COLUMN_MEMBERS},
        "customer_metadata_properties": params.get("CustomerMetadataProperties", {}),
        "client_token": token,
        "created_by": _user_context(ctx),
        "creation_time": now,
    }
    if "ModelPackageGroupName" in params:
        return _create_version(ctx, params, fields)
    return _create_unversioned(ctx, params, fields)


def _create_version(ctx: RequestContext, params: dict, fields: dict) -> ModelPackage:
    """The group's next version: the group's row is locked while it is numbered, so two packages
    registered at once get two versions."""
    with transaction.atomic():
        group = _find_group(ctx, params["ModelPackageGroupName"])
        if group is None:
            # The real service's words (amazon-sagemaker-examples compare the message to this).
            raise ValidationException("Model Package Group does not exist.")
        ModelPackageGroup.objects.filter(pk=group.pk).update(latest_version=F("latest_version") + 1)
        version = ModelPackageGroup.objects.values_list("latest_version", flat=True).get(pk=group.pk)
        return ModelPackage.objects.create(
            model_package_name=group.model_package_group_name,
            model_package_arn=names.package_arn(ctx, group.model_package_group_name, version),
            group=group,
            model_package_version=version,
            model_approval_status=params.get("ModelApprovalStatus", DEFAULT_APPROVAL_STATUS),
            **fields,
        )


def _create_unversioned(ctx: RequestContext, params: dict, fields: dict) -> ModelPackage:
    name = params["ModelPackageName"]
    arn = names.package_arn(ctx, name)
    try:
        with transaction.atomic():
            return ModelPackage.objects.create(
                model_package_name=name,
                model_package_arn=arn,
                model_approval_status=params.get("ModelApprovalStatus", ""),
                tags=params.get("Tags", []),
                **fields,
            )
    except IntegrityError:
        raise ValidationException(f"Model Package already exists: {arn}") from None


def get_package(ctx: RequestContext, given: str) -> ModelPackage:
    found = names.named(ctx, given, names.PACKAGE_TYPE)
    package = None
    if found is not None:
        arn = names.package_arn(ctx, found.name, found.version)
        package = _scoped(ModelPackage, ctx).filter(model_package_arn=arn).first()
    if package is None:
        arn = given.lower() if given.startswith("arn:") else names.package_arn(ctx, given)
        raise ValidationException(f"ModelPackage {arn} does not exist.")
    return package


def delete_package(ctx: RequestContext, given: str) -> None:
    """Allowed while models made from it exist: CreateModel copied what it needed."""
    get_package(ctx, given).delete()


def update_package(ctx: RequestContext, params: dict) -> ModelPackage:
    requests.check_update_model_package(params)
    with transaction.atomic():
        package = get_package(ctx, params["ModelPackageArn"])
        package = ModelPackage.objects.select_for_update().get(pk=package.pk)
        if "ModelApprovalStatus" in params:
            package.model_approval_status = params["ModelApprovalStatus"]
        if "ApprovalDescription" in params:
            package.approval_description = params["ApprovalDescription"]
        metadata = {**package.customer_metadata_properties, **params.get("CustomerMetadataProperties", {})}
        for key in params.get("CustomerMetadataPropertiesToRemove", []):
            metadata.pop(key, None)
        package.customer_metadata_properties = metadata
        package.request = _updated_request(package.request, params)
        package.last_modified_time = timezone.now()
        package.last_modified_by = _user_context(ctx)
        package.save()
    return package


# UpdateModelPackage members that replace the stored one.
_REPLACED_MEMBERS = (
    "InferenceSpecification", "SourceUri", "ModelCard", "ModelLifeCycle", "ModelPackageRegistrationType"
)
# AdditionalInferenceSpecificationsToAdd: "Total number … can not exceed 15" (its documentation).
MAX_ADDITIONAL_SPECIFICATIONS = 15


def _updated_request(request: dict, params: dict) -> dict:
    updated = {**request, **{member: params[member] for member in _REPLACED_MEMBERS if member in params}}
    added = params.get("AdditionalInferenceSpecificationsToAdd")
    if added:
        specifications = updated.get("AdditionalInferenceSpecifications", []) + added
        if len(specifications) > MAX_ADDITIONAL_SPECIFICATIONS:
            raise ValidationException(
                f"A model package can have at most {MAX_ADDITIONAL_SPECIFICATIONS} additional inference "
                f"specifications; this request would leave {len(specifications)}."
            )
        updated["AdditionalInferenceSpecifications"] = specifications
    return updated


def package_rows(ctx: RequestContext, params: dict) -> QuerySet:
    """ListModelPackages' rows. The type defaults to Unversioned (its documentation; boto3 issue
    3069: SageMaker keeps that default), except that naming a group lists the group's versions."""
    rows = _scoped(ModelPackage, ctx)
    if "ModelPackageGroupName" in params:
        group = _find_group(ctx, params["ModelPackageGroupName"])
        rows = rows.filter(group=group) if group is not None else rows.none()
    default_type = "Versioned" if "ModelPackageGroupName" in params else "Unversioned"
    package_type = params.get("ModelPackageType", default_type)
    if package_type != "Both":
        rows = rows.filter(group__isnull=package_type == "Unversioned")
    if "ModelApprovalStatus" in params:
        rows = rows.filter(model_approval_status=params["ModelApprovalStatus"])
    return filtered_and_sorted(
        rows,
        params,
        operation="ListModelPackages",
        name_field="model_package_name",
        sort_fields=SORT_FIELDS_PACKAGES,
    )


def list_packages(ctx: RequestContext, params: dict) -> tuple[list[ModelPackage], str | None]:
    return paginate(package_rows(ctx, params), params.get("NextToken"), params.get("MaxResults"))


# --- What CreateModel deploys ----------------------------------------------------------------


def inference_container(ctx: RequestContext, given: str) -> dict:
    """The one container of the package's InferenceSpecification, which CreateModel runs."""
    package = get_package(ctx, given)
    containers = package.request.get("InferenceSpecification", {}).get("Containers", [])
    if not containers:
        raise ValidationException(
            f"Model package {package.model_package_arn} has no InferenceSpecification to deploy."
        )
    if len(containers) > 1:
        raise ValidationException(
            f"Model package {package.model_package_arn} has {len(containers)} inference containers: "
            "inference pipelines are not supported by Sageport."
        )
    if "ProductId" in containers[0]:
        raise ValidationException(
            f"Model package {package.model_package_arn} is an AWS Marketplace product: "
            "not available in Sageport."
        )
    return containers[0]


# --- What Search finds -----------------------------------------------------------------------


def search_packages(ctx: RequestContext) -> list[dict]:
    """Every package as Search's `ModelPackage` record; a version has its group's tags."""
    rows = _scoped(ModelPackage, ctx).select_related("group")
    return [
        presenters.package_record(package, package.group.tags if package.group else package.tags)
        for package in rows
    ]


def search_groups(ctx: RequestContext) -> list[dict]:
    return [presenters.group_record(group) for group in _scoped(ModelPackageGroup, ctx)]
