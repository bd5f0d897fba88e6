"""Who a request's key acts as, in STS's words (GetCallerIdentity's Arn and UserId, the caller
named in AssumeRole's AccessDenied).

Every key is a role session, `arn:aws:sts::<account>:assumed-role/<role>/<session>`:
- STS's temporary credentials: the role and session AssumeRole named (`AccessKey.principal`);
- a container's keys: its resource's execution role (a training job's RoleArn, an endpoint
  model's ExecutionRoleArn, a HyperPod instance group's ExecutionRole), session `SageMaker`, as
  on SageMaker (`AccessKey.principal`, set by accounts/container_credentials.py);
- any other key of the account (the default key of `.sageport/env`, `createaccesskey`'s, a
  container's whose resource names no role): the account's execution role `SageMakerRole`,
  session `SageMaker`, which is what credentials inside a SageMaker notebook instance are. So code
  written for SageMaker finds a role where it looks for one: `sagemaker.get_execution_role()`
  answers `arn:aws:iam::<account>:role/SageMakerRole` (the role the quick start's examples name), where
  with an IAM user's keys it would raise."""

from dataclasses import dataclass

from accounts.accesskeys import ASSUMED_ROLE_PREFIX, assumed_role_principal
from accounts.models import AccessKey
from identity import roles
from protocol.arns import partition_for
from protocol.context import RequestContext
from protocol.errors import UnrecognizedClient

ACCOUNT_ROLE = "SageMakerRole"
ACCOUNT_SESSION = "SageMaker"


@dataclass(frozen=True)
class Caller:
    account_id: str
    arn: str
    user_id: str


def session_arn(partition: str, account_id: str, role_name: str, session_name: str) -> str:
    return f"arn:{partition}:sts::{account_id}:{assumed_role_principal(role_name, session_name)}"


def caller(ctx: RequestContext) -> Caller:
    key = AccessKey.objects.filter(access_key_id=ctx.access_key_id).first()
    if key is None:  # deleted since the signature was checked
        raise UnrecognizedClient("The security token included in the request is invalid.")
    if key.principal.startswith(ASSUMED_ROLE_PREFIX):
        role_name, _, session_name = key.principal.removeprefix(ASSUMED_ROLE_PREFIX).partition("/")
    else:
        role_name, session_name = ACCOUNT_ROLE, ACCOUNT_SESSION
    role = roles.referenced(key.account_id, role_name)
    return Caller(
        account_id=key.account_id,
        arn=session_arn(partition_for(ctx.region), key.account_id, role.role_name, session_name),
        user_id=f"{role.role_id}:{session_name}",
    )
