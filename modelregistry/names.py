"""What a registry request names: a group or a package by name or ARN (the `ArnOrName` and
`VersionedArnOrName` shapes), and the ARNs SageMaker gives them.

A versioned package's ARN is `…:model-package/<group>/<version>`, an unversioned one's
`…:model-package/<name>`, a group's `…:model-package-group/<name>` (CreateModelPackage and
CreateModelPackageGroup output shapes); names inside ARNs are lower-cased, as SageMaker does."""

import re
from typing import NamedTuple

from protocol.arns import make_arn
from protocol.context import RequestContext

GROUP_TYPE = "model-package-group"
PACKAGE_TYPE = "model-package"

# The shapes' own patterns already held (validation ran): an optional ARN prefix, a name, and
# for a package an optional `/<version>`.
_NAMED = re.compile(
    r"^(?:arn:aws[a-z\-]*:sagemaker:(?P<region>[a-z0-9\-]*):(?P<account>[0-9]{12}):(?P<type>[a-z\-]*)/)?"
    r"(?P<name>[a-zA-Z0-9][a-zA-Z0-9-]*)(?:/(?P<version>[0-9]+))?$"
)


class Named(NamedTuple):
    name: str
    version: int | None


def group_arn(ctx: RequestContext, name: str) -> str:
    return make_arn(ctx.region, ctx.account_id, GROUP_TYPE, name)


def package_arn(ctx: RequestContext, name: str, version: int | None = None) -> str:
    resource = name if version is None else f"{name}/{version}"
    return make_arn(ctx.region, ctx.account_id, PACKAGE_TYPE, resource)


def named(ctx: RequestContext, given: str, resource_type: str) -> Named | None:
    """The name (and version) `given` names in the caller's account and region, or None when it
    is an ARN of another account, region or resource type: nothing there is the caller's."""
    match = _NAMED.match(given)
    if match is None:
        return None
    if match["type"] is not None and (
        match["type"] != resource_type or match["account"] != ctx.account_id or match["region"] != ctx.region
    ):
        return None
    version = match["version"]
    return Named(match["name"], None if version is None else int(version))
