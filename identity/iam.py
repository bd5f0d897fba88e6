"""IAM on the query protocol: GetRole, CreateRole, ListRoles, DeleteRole (roles.py: what a role
is here, and why roles exist on first reference), and SimulatePrincipalPolicy, which the SageMaker
SDK v3 calls to validate a job's role before every ModelTrainer.train (an error other than
AccessDenied or NoSuchEntity there fails the job): Sageport enforces no IAM permissions (a key of
an account may do anything to the account's resources), so the faithful simulation of what it
allows is `allowed` for every action, for a principal of the caller's account.

IAM is global: botocore signs its requests for us-east-1 against AWS's endpoint and for the
client's region with an endpoint URL; roles are the account's, in no region, whatever region
signed."""

import re
from urllib.parse import quote

from identity import roles
from identity.models import Role
from protocol.arns import partition_for
from protocol.context import RequestContext
from protocol.limits import echo
from protocol.pagination import paginate
from protocol.registry import IAM, operation

DEFAULT_MAX_ITEMS = 100  # MaxItems when absent (IAM's API reference)
# A user, group or role ARN (SimulatePrincipalPolicy's PolicySourceArn; the account is field 4).
_IAM_PRINCIPAL = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:(?:user|group|role)/.+$")


@operation("GetRole", service=IAM)
def get_role(ctx: RequestContext, params: dict) -> dict:
    role = roles.referenced(ctx.account_id, params["RoleName"])
    return {"Role": {**_role_view(role, ctx), "RoleLastUsed": {}}}


@operation("CreateRole", service=IAM)
def create_role(ctx: RequestContext, params: dict) -> dict:
    role = roles.create(
        ctx.account_id,
        params["RoleName"],
        document=params["AssumeRolePolicyDocument"],
        path=params.get("Path", "/"),
        description=params.get("Description"),
        max_session_duration=params.get("MaxSessionDuration"),
        tags=params.get("Tags"),
    )
    return {"Role": _role_view(role, ctx)}


@operation("ListRoles", service=IAM)
def list_roles(ctx: RequestContext, params: dict) -> dict:
    page, marker = paginate(
        roles.listed(ctx.account_id, params.get("PathPrefix", "/")),
        params.get("Marker"),
        params.get("MaxItems"),
        DEFAULT_MAX_ITEMS,
    )
    # ListRoles leaves out tags and last use (IAM's API reference: GetRole for those).
    listed = [{**_role_view(role, ctx), "Tags": None} for role in page]
    return {"Roles": listed, "IsTruncated": marker is not None, "Marker": marker}


@operation("SimulatePrincipalPolicy", service=IAM)
def simulate_principal_policy(ctx: RequestContext, params: dict) -> dict:
    source = params["PolicySourceArn"]
    if not _IAM_PRINCIPAL.match(source) or source.split(":")[4] != ctx.account_id:
        raise roles.NoSuchEntity(f"PolicySourceArn {echo(source)} is no principal of this account.")
    results = [
        {
            "EvalActionName": action,
            "EvalResourceName": resource,
            "EvalDecision": "allowed",
            "MatchedStatements": [],
            "MissingContextValues": [],
        }
        for action in params["ActionNames"]
        for resource in params.get("ResourceArns") or ["*"]
    ]
    page, marker = paginate(results, params.get("Marker"), params.get("MaxItems"), DEFAULT_MAX_ITEMS)
    return {"EvaluationResults": page, "IsTruncated": marker is not None, "Marker": marker}


@operation("DeleteRole", service=IAM)
def delete_role(ctx: RequestContext, params: dict) -> dict:
    roles.delete(ctx.account_id, params["RoleName"])
    return {}


def _role_view(role: Role, ctx: RequestContext) -> dict:
    return {
        "Path": role.path,
        "RoleName": role.role_name,
        "RoleId": role.role_id,
        "Arn": roles.role_arn(role, partition_for(ctx.region)),
        "CreateDate": role.created_at,
        # URL-encoded JSON, as IAM answers it (botocore decodes it back into a dict for boto3).
        "AssumeRolePolicyDocument": quote(role.assume_role_policy_document, safe=""),
        "Description": role.description or None,
        "MaxSessionDuration": role.max_session_duration,
        "Tags": role.tags or None,
    }
