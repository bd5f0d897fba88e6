"""Who a request's key acts as, in STS's words (GetCallerIdentity's Arn and UserId, the caller
named in AssumeRole's AccessDenied).

Every key is a role session, `arn:aws:sts::<account>:assumed-role/<role>/<session>`:
- STS's temporary credentials: the role and session AssumeRole named (`AccessKey.principal`);
- any other key of the account (the default key of `.sageport/env`, `createaccesskey`'s,
  containers'): the account's execution role `SageMakerRole`, session `SageMaker`, which is what
  credentials inside a SageMaker notebook instance or training job are. So code written for
  SageMaker finds a role where it looks for one: `sagemaker.get_execution_role()` answers
  `arn:aws:iam::<account>:role/SageMakerRole` (the role the README's examples name), where with
  an IAM user's keys it would raise."""

from dataclasses import dataclass

from accounts.models import AccessKey
from identity import roles
from protocol.arns import partition_for
from protocol.context import RequestContext
from protocol.errors import UnrecognizedClient

ACCOUNT_ROLE = "SageMakerRole"
ACCOUNT_SESSION = "SageMaker"
_ASSUMED_ROLE = "assumed-role/"


@dataclass(frozen=True)
class Caller:
    account_id: str
    arn: str
    user_id: str


def assumed_role_principal(role_name: str, session_name: str) -> str:
    """What `AccessKey.principal` holds for a session of `role_name`."""
    return f"{_ASSUMED_ROLE}{role_name}/{session_name}"


def session_arn(partition: str, account_id: str, role_name: str, session_name: str) -> str:
    return f"arn:{partition}:sts::{account_id}:{assumed_role_principal(role_name, session_name)}"


def caller(ctx: RequestContext) -> Caller:
    key = AccessKey.objects.filter(access_key_id=ctx.access_key_id).first()
    if key is None:  # deleted since the signature was checked
        raise UnrecognizedClient("The security token included in the request is invalid.")
    if key.principal.startswith(_ASSUMED_ROLE):
        role_name, _, session_name = key.principal.removeprefix(_ASSUMED_ROLE).partition("/")
    else:
        role_name, session_name = ACCOUNT_ROLE, ACCOUNT_SESSION
    role = roles.referenced(key.account_id, role_name)
    return Caller(
        account_id=key.account_id,
        arn=session_arn(partition_for(ctx.region), key.account_id, role.role_name, session_name),
        user_id=f"{role.role_id}:{session_name}",
    )
