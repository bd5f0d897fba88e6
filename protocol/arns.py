"""Amazon Resource Names: `arn:aws:<service>:<region>:<account>:<resource-type>/<name>`."""

import re
from dataclasses import dataclass

from protocol.errors import ValidationException

_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z\-]*):(?P<service>[a-z0-9\-]+):(?P<region>[a-z0-9\-]*):"
    r"(?P<account_id>\d{12})?:(?P<resource_type>[^:/]+)[:/](?P<resource_name>.+)$"
)


@dataclass(frozen=True)
class Arn:
    partition: str
    service: str
    region: str
    account_id: str
    resource_type: str
    resource_name: str


def partition_for(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def make_arn(region: str, account_id: str, resource_type: str, name: str, service: str = "sagemaker") -> str:
    """`arn:aws:sagemaker:<region>:<account>:<type>/<name>`, the name lower-cased as SageMaker
    does; match such ARNs case-insensitively."""
    return f"arn:{partition_for(region)}:{service}:{region}:{account_id}:{resource_type}/{name.lower()}"


def log_group_arn(region: str, account_id: str, log_group_name: str) -> str:
    """A CloudWatch Logs group ARN (names keep their case; `:` separates the resource)."""
    return f"arn:{partition_for(region)}:logs:{region}:{account_id}:log-group:{log_group_name}"


def parse_arn(arn: str) -> Arn:
    """Split an ARN into its parts; ValidationException when it is not one."""
    match = _ARN.match(arn)
    if match is None:
        raise ValidationException(f"Invalid ARN: '{arn}'.")
    return Arn(**{key: value or "" for key, value in match.groupdict().items()})


# A role IAM can hold: a path of at most 512 characters (`/`, or `/…/`), a name of at most 64 of
# `[\w+=,.@-]` (IAM API reference, Role: Path, RoleName). SageMaker's RoleArn pattern takes more.
_IAM_ROLE_ARN = re.compile(
    r"^arn:aws[a-z-]*:iam::\d{12}:role(?P<path>/(?:[\x21-\x7e]*/)?)(?P<name>[\w+=,.@-]{1,64})$"
)
_MAX_ROLE_PATH = 512


def is_iam_role_arn(arn: str) -> bool:
    """Whether `arn` can name a role of IAM at all."""
    match = _IAM_ROLE_ARN.match(arn)
    return match is not None and len(match["path"]) <= _MAX_ROLE_PATH


def role_name(role_arn: str) -> str:
    """The name of the role an IAM role ARN names, its path left out, as STS names the role of a
    session: `arn:aws:iam::<account>:role/service-role/Foo` → `Foo`."""
    return role_arn.rpartition(":role")[2].rpartition("/")[2]


def role_path(role_arn: str) -> str:
    """The IAM path of the role an IAM role ARN names: `…:role/service-role/Foo` → `/service-role/`,
    `…:role/Foo` → `/`."""
    return role_arn.rpartition(":role")[2].rpartition("/")[0] + "/"
