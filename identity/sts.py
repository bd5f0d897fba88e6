"""STS on the query protocol: GetCallerIdentity and AssumeRole.

AssumeRole's credentials are an access key of the role's account with an expiry (id `ASIA…`,
principal `assumed-role/<role>/<session>`) and its session token (protocol/sigv4.session_token_for):
every server that resolves keys (the API, the data plane, the S3 gateway) accepts them as it
accepts the account's own keys, refuses them without their token, and answers ExpiredToken once
they expire. A role of another account is refused as AWS refuses a role whose trust policy does
not name the caller: AccessDenied."""

import re
from datetime import timedelta

from django.utils import timezone

from accounts.accesskeys import create_access_key
from identity import principals, roles
from identity.principals import Caller
from protocol.arns import partition_for
from protocol.context import RequestContext
from protocol.errors import AccessDenied, QueryValidationError
from protocol.limits import echo
from protocol.registry import STS, operation
from protocol.sigv4 import TEMPORARY_KEY_PREFIX, session_token_for

DEFAULT_DURATION_SECONDS = 3600  # STS's default DurationSeconds
# A role assumed with temporary credentials (role chaining) lasts at most an hour (IAM user guide,
# "Role chaining"); the account's own keys are not temporary credentials, so no chaining.
CHAINED_MAX_SECONDS = 3600
_ARN = re.compile(r"^arn:[^:]+:[^:]+:.")  # arn, partition, service: an ARN, if a wrong one
_ROLE_ARN = re.compile(
    r"^arn:aws[a-z-]*:iam::(?P<account>\d{12}):role(?P<path>/(?:[\x21-\x7e]*/)?)(?P<name>[\w+=,.@-]{1,64})$"
)


@operation("GetCallerIdentity", service=STS)
def get_caller_identity(ctx: RequestContext, params: dict) -> dict:
    found = principals.caller(ctx)
    return {"UserId": found.user_id, "Account": found.account_id, "Arn": found.arn}


@operation("AssumeRole", service=STS)
def assume_role(ctx: RequestContext, params: dict) -> dict:
    who = principals.caller(ctx)
    role = _assumable_role(params["RoleArn"], who)
    duration = _duration(ctx, params.get("DurationSeconds", DEFAULT_DURATION_SECONDS), role)
    session = params["RoleSessionName"]
    key = create_access_key(
        role.account_id,
        expires_at=timezone.now() + timedelta(seconds=duration),
        principal=principals.assumed_role_principal(role.role_name, session),
        id_prefix=TEMPORARY_KEY_PREFIX,
    )
    return {
        "Credentials": {
            "AccessKeyId": key.access_key_id,
            "SecretAccessKey": key.secret_access_key,
            "SessionToken": session_token_for(key.secret_access_key),
            "Expiration": key.expires_at,
        },
        "AssumedRoleUser": {
            "AssumedRoleId": f"{role.role_id}:{session}",
            "Arn": principals.session_arn(
                partition_for(ctx.region), role.account_id, role.role_name, session
            ),
        },
    }


def _duration(ctx: RequestContext, seconds: int, role: roles.Role) -> int:
    """The session's lifetime: within STS's bounds already (the model's 900..43200), and within
    the role's MaxSessionDuration and the chaining limit, as STS refuses them."""
    if ctx.access_key_id.startswith(TEMPORARY_KEY_PREFIX) and seconds > CHAINED_MAX_SECONDS:
        raise QueryValidationError(
            "The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by "
            "role chaining."
        )
    if seconds > role.max_session_duration:
        raise QueryValidationError(
            "The requested DurationSeconds exceeds the MaxSessionDuration set for this role."
        )
    return seconds


def _assumable_role(arn: str, who: Caller) -> roles.Role:
    """The role `arn` names, if the caller may assume it: one of the caller's own account (on
    first reference, roles.py). Not an ARN: ValidationError; any other ARN (another account's
    role, a user, another service's resource, a path that does not match the role's): AccessDenied,
    as STS answers when the trust policy does not let the caller in."""
    if not _ARN.match(arn):
        raise QueryValidationError("Request ARN is invalid")  # STS's words (public reports)
    match = _ROLE_ARN.match(arn)
    if match is None or match["account"] != who.account_id:
        raise _denied(who, arn)
    role = roles.referenced(who.account_id, match["name"], path=match["path"])
    if role.path != match["path"]:
        raise _denied(who, arn)
    return role


def _denied(who: Caller, arn: str) -> AccessDenied:
    return AccessDenied(
        f"User: {who.arn} is not authorized to perform: sts:AssumeRole on resource: {echo(arn)}"
    )
