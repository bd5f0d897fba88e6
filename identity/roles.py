"""An account's IAM roles: what GetRole, CreateRole, ListRoles, DeleteRole and AssumeRole read
and write.

Roles exist on first reference: a GetRole or AssumeRole of a name nobody created answers, and
records, a role whose trust policy lets SageMaker assume it, as a SageMaker execution role's does.
Unmodified SageMaker code names roles it never creates (a job's `RoleArn`, the README's
`SageMakerRole`) and then looks them up: `sagemaker.get_execution_role()` calls GetRole on the
caller's role, the SDK v3's ModelTrainer calls IAM on the job's role even with
SAGEMAKER_VALIDATE_ROLE=false. Sageport checks no permissions, so a role is only a name, a trust
policy and a path; refusing unknown names would break that code and protect nothing. CreateRole
records a role with the client's own trust policy, and is refused (EntityAlreadyExists) for a
name that already exists, created or referenced, as IAM refuses it."""

import json
import secrets
import string

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from accounts.models import ContainerGrant
from identity.models import Role
from protocol.arns import role_name, role_path
from protocol.errors import ServiceError
from protocol.limits import echo

ROLE_ID_PREFIX = "AROA"  # IAM's prefix of a role's unique id
DEFAULT_MAX_SESSION_SECONDS = 3600  # IAM's default MaxSessionDuration
SAGEMAKER_TRUST_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
)
_ID_ALPHABET = string.ascii_uppercase + string.digits


class NoSuchEntity(ServiceError):
    code = "NoSuchEntity"
    status = 404


class EntityAlreadyExists(ServiceError):
    code = "EntityAlreadyExists"
    status = 409


class MalformedPolicyDocument(ServiceError):
    code = "MalformedPolicyDocument"
    status = 400


def role_arn(role: Role, partition: str) -> str:
    """`arn:aws:iam::<account>:role/<path without its leading slash><name>`, as IAM writes it."""
    return f"arn:{partition}:iam::{role.account_id}:role{role.path}{role.role_name}"


def find(account_id: str, name: str) -> Role | None:
    return Role.objects.filter(account_id=account_id, name_key=name.lower()).first()


def referenced(account_id: str, name: str, path: str = "/") -> Role:
    """The role `name` of the account, recorded with SageMaker's trust policy on first reference
    (the module's docstring says why)."""
    existing = find(account_id, name)
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return _insert(account_id, name, path=path, document=SAGEMAKER_TRUST_POLICY)
    except IntegrityError:  # a concurrent request recorded it between our read and our insert
        return find(account_id, name)


def record_execution_role(sender, instance: ContainerGrant, created: bool, **kwargs) -> None:
    """A role whose keys a job's, endpoint's or cluster's containers get is referenced then, with
    the path its ARN names (`post_save` of ContainerGrant, connected in apps.py): inside the
    container `sagemaker.get_execution_role()` turns the session's ARN (no path) into the role's
    with IAM GetRole, and must get the ARN the request passed."""
    if created and instance.role_arn:
        referenced(instance.account_id, role_name(instance.role_arn), path=role_path(instance.role_arn))


def create(account_id: str, name: str, *, document: str, path: str = "/", **details) -> Role:
    """CreateRole: `details` are `description`, `max_session_duration`, `tags`."""
    check_policy_document(document)
    try:
        with transaction.atomic():
            return _insert(account_id, name, path=path, document=document, **details)
    except IntegrityError:
        raise EntityAlreadyExists(f"Role with name {echo(name)} already exists.") from None


def listed(account_id: str, path_prefix: str = "/") -> QuerySet:
    return Role.objects.filter(account_id=account_id, path__startswith=path_prefix).order_by("name_key")


def delete(account_id: str, name: str) -> None:
    deleted, _ = Role.objects.filter(account_id=account_id, name_key=name.lower()).delete()
    if not deleted:
        raise NoSuchEntity(f"The role with name {echo(name)} cannot be found.")


def check_policy_document(document: str) -> None:
    """A trust policy is a JSON object with statements (IAM's MalformedPolicyDocument otherwise;
    its permissions are not evaluated: Sageport checks none)."""
    try:
        policy = json.loads(document)
    except ValueError:
        raise MalformedPolicyDocument("This policy contains invalid Json") from None
    statements = policy.get("Statement") if isinstance(policy, dict) else None
    if not isinstance(statements, list | dict) or not statements:
        raise MalformedPolicyDocument("Syntax errors in policy.")


def _insert(account_id: str, name: str, *, path: str, document: str, **details) -> Role:
    return Role.objects.create(
        account_id=account_id,
        role_name=name,
        name_key=name.lower(),
        path=path,
        role_id=ROLE_ID_PREFIX + "".join(secrets.choice(_ID_ALPHABET) for _ in range(17)),
        assume_role_policy_document=document,
        **{key: value for key, value in details.items() if value is not None},
    )
