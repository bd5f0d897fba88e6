"""AddTags / ListTags / DeleteTags for every taggable resource kind.

Apps declare their taggable models with `register_taggable("training-job", TrainingJob,
"training_job_arn")`; a model keeps its tags as a JSON list of {"Key", "Value"} in a `tags`
column and carries `account_id`. ARNs are matched case-insensitively (SageMaker lower-cases the
name inside them)."""

from django.db import models, transaction

from protocol.context import RequestContext
from protocol.errors import ValidationException
from protocol.pagination import paginate
from protocol.registry import operation

MAX_TAGS_PER_RESOURCE = 50
RESERVED_PREFIX = "aws:"

_taggable: dict[str, tuple[type[models.Model], str]] = {}


def register_taggable(resource_type: str, model: type[models.Model], arn_field: str) -> None:
    _taggable[resource_type] = (model, arn_field)


def _resource_type(arn: str) -> str:
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[2] != "sagemaker":
        return ""
    return parts[5].split("/", 1)[0]


def _find_resource(ctx: RequestContext, arn: str, *, for_update: bool = False) -> models.Model:
    entry = _taggable.get(_resource_type(arn))
    if entry is not None:
        model, arn_field = entry
        rows = model.objects.select_for_update() if for_update else model.objects
        resource = rows.filter(account_id=ctx.account_id, **{arn_field: arn.lower()}).first()
        if resource is not None:
            return resource
    raise ValidationException(f"Resource does not exist: {arn}")


def _check_keys(keys: list[str]) -> None:
    reserved = [key for key in keys if key.lower().startswith(RESERVED_PREFIX)]
    if reserved:
        raise ValidationException(
            f"Tag keys starting with '{RESERVED_PREFIX}' are reserved for system use: {', '.join(reserved)}"
        )


@operation("AddTags")
def add_tags(ctx: RequestContext, params: dict) -> dict:
    _check_keys([tag["Key"] for tag in params["Tags"]])
    with transaction.atomic():
        resource = _find_resource(ctx, params["ResourceArn"], for_update=True)
        merged = {tag["Key"]: tag["Value"] for tag in resource.tags}
        merged.update({tag["Key"]: tag.get("Value", "") for tag in params["Tags"]})
        if len(merged) > MAX_TAGS_PER_RESOURCE:
            raise ValidationException(
                f"A resource can have at most {MAX_TAGS_PER_RESOURCE} tags; "
                f"this request would leave {len(merged)}."
            )
        resource.tags = [{"Key": key, "Value": value} for key, value in merged.items()]
        resource.save(update_fields=["tags"])
    return {"Tags": resource.tags}


@operation("ListTags")
def list_tags(ctx: RequestContext, params: dict) -> dict:
    resource = _find_resource(ctx, params["ResourceArn"])
    tags, next_token = paginate(resource.tags, params.get("NextToken"), params.get("MaxResults"))
    return {"Tags": tags, "NextToken": next_token}


@operation("DeleteTags")
def delete_tags(ctx: RequestContext, params: dict) -> dict:
    doomed = set(params["TagKeys"])
    with transaction.atomic():
        resource = _find_resource(ctx, params["ResourceArn"], for_update=True)
        resource.tags = [tag for tag in resource.tags if tag["Key"] not in doomed]
        resource.save(update_fields=["tags"])
    return {}
