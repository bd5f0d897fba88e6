"""Role credentials for containers, handed out the way ECS and SageMaker do: a container is given
the URL of a credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI) and a token
(AWS_CONTAINER_AUTHORIZATION_TOKEN); botocore, the AWS CLI and every AWS SDK fetch short-lived
keys there, and fetch again before they expire.

A training job, an endpoint or a HyperPodPyTorchJob (the holder, by ARN) gets one
`ContainerGrant` per execution role when its first container of that role is specified. The keys
act as that role, session `SageMaker` (`AccessKey.principal`: `assumed-role/<role name>/SageMaker`),
which is who code in a SageMaker training or serving container, or on a HyperPod node, is: its
GetCallerIdentity answers `arn:aws:sts::<account>:assumed-role/<role name>/SageMaker`, the role's
path left out; a holder with no role acts as the account's own (identity/principals.py).

Each fetch answers a key of the grant with more than half of SAGEPORT_CONTAINER_CREDENTIALS_SECONDS
left, so a container that refreshes before expiry, as the SDKs do 15 minutes ahead, always gets a
key with time left. Keys are minted before anyone asks for them: the first with the grant (before
the container starts), the next by the sweeper once the newest has less than three quarters of its
life left (`sweep`). A fetch prefers a key at least SETTLE_SECONDS old: what derives from the keys
(the bundled S3's identities, synced when a key is saved) has caught up with it, so an SDK never
gets a key S3 does not know yet. The holder's end deletes its grants and every key they yielded
(`revoke`); the sweeper also deletes keys past their expiry, and the features revoke holders that
ended while nobody revoked them (`revoke_ended`, from their reapers, which know what is live).

The keys are plain access keys with an expiry: expiry and revocation belong to the key itself.
`Token` is the key's session token derived from its secret (protocol/sigv4.session_token_for):
SigV4 needs none, but clients built on the AWS CRT (s3torchconnector, which AWS's
tiered-checkpointing library uses) refuse container credentials without one. The API and the
S3 gateway accept a key's own token and refuse any other; the gateway never passes it on to the
store. Never the stack's own S3 key: these are the account's keys, usable wherever the account's
user keys are."""

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.accesskeys import assumed_role_principal, create_access_key
from accounts.models import AccessKey, ContainerGrant
from protocol.arns import role_name
from protocol.sigv4 import session_token_for

TOKEN_BYTES = 32
SETTLE_SECONDS = 5.0
# The session name of the role SageMaker assumes for a job's, an endpoint's or a HyperPod
# instance group's containers (the `/SageMaker` of their callers' ARNs).
CONTAINER_SESSION = "SageMaker"


@dataclass(frozen=True)
class ContainerCredentials:
    access_key_id: str
    secret_access_key: str
    account_id: str
    expires_at: datetime

    def as_json(self) -> dict:
        """The body ECS's credentials endpoint answers, which every SDK's container provider reads."""
        return {
            "AccessKeyId": self.access_key_id,
            "SecretAccessKey": self.secret_access_key,
            "Token": session_token_for(self.secret_access_key),  # see the module's docstring
            "Expiration": self.expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "AccountId": self.account_id,
        }


def grant(holder: str, account_id: str, role_arn: str = "") -> str:
    """The authorization token of `holder`'s containers acting as `role_arn` ("": the account's
    own role), created on first use: every container of the holder with that role (several
    instances, a restarted one) gets the same token."""
    existing = ContainerGrant.objects.filter(holder=holder, role_arn=role_arn).first()
    if existing is not None:
        return existing.token
    try:
        with transaction.atomic():
            created = ContainerGrant.objects.create(
                holder=holder,
                account_id=account_id,
                role_arn=role_arn,
                token=secrets.token_urlsafe(TOKEN_BYTES),
            )
    except IntegrityError:  # a concurrent step created it between our read and our insert
        return ContainerGrant.objects.get(holder=holder, role_arn=role_arn).token
    _mint(created)  # outside the grant's transaction: a key is announced (saved) once committed
    return created.token


def credentials_for(token: str) -> ContainerCredentials | None:
    """A key with time left for the grant proven by `token`; None for an unknown (revoked) token."""
    found = ContainerGrant.objects.filter(token=token).first() if token else None
    if found is None:
        return None
    now = timezone.now()
    usable = _keys_lasting(found, until=now + _lifetime() / 2)
    settled = usable.filter(created_at__lte=now - timedelta(seconds=SETTLE_SECONDS))
    # Minting here is the last resort (keys are minted ahead): the key may be seconds too new for S3.
    key = settled.order_by("-expires_at").first() or usable.order_by("-expires_at").first() or _mint(found)
    return ContainerCredentials(key.access_key_id, key.secret_access_key, key.account_id, key.expires_at)


def sweep() -> None:
    """The sweeper's share: mint each live grant's next key ahead of need, and delete expired
    keys (already refused; deleting them keeps the table, and the S3 identities derived from it,
    small)."""
    fresh_until = timezone.now() + _lifetime() * 3 / 4
    for live in ContainerGrant.objects.all():
        if not _keys_lasting(live, until=fresh_until).exists():
            _mint(live)
    for key in AccessKey.objects.filter(expires_at__lte=timezone.now()):
        key.delete()


def principal(role_arn: str) -> str:
    """Whom the keys of a grant of `role_arn` act as (`AccessKey.principal`): a session of the
    role, named without its path as STS names it; "" (the account's own role) for no role."""
    return assumed_role_principal(role_name(role_arn), CONTAINER_SESSION) if role_arn else ""


def _keys_lasting(of: ContainerGrant, until: datetime):
    return AccessKey.objects.filter(
        issued_for=of.holder, principal=principal(of.role_arn), active=True, expires_at__gt=until
    )


def _mint(of: ContainerGrant) -> AccessKey:
    return create_access_key(
        of.account_id,
        expires_at=timezone.now() + _lifetime(),
        issued_for=of.holder,
        principal=principal(of.role_arn),
    )


def _lifetime() -> timedelta:
    return timedelta(seconds=settings.SAGEPORT_CONTAINER_CREDENTIALS_SECONDS)


def revoke(holder: str) -> None:
    """The holder ended: its token and every key it was given stop working. Rows are deleted one
    by one (not in bulk) so that whatever listens to AccessKey deletions (the S3 identities kept
    in sync with the keys) hears of each."""
    ContainerGrant.objects.filter(holder=holder).delete()
    for key in AccessKey.objects.filter(issued_for=holder):
        key.delete()


def revoke_roles_except(holder: str, kept: set[str]) -> None:
    """`holder` goes on, but its containers acting as any role not in `kept` ("" the account's
    own) are gone (an endpoint updated to models with other execution roles): those roles' tokens
    and keys stop working."""
    for ended in ContainerGrant.objects.filter(holder=holder).exclude(role_arn__in=kept):
        for key in AccessKey.objects.filter(issued_for=holder, principal=principal(ended.role_arn)):
            key.delete()
        ended.delete()


def holders(resource_type: str) -> set[str]:
    """The holders of grants whose ARN names a resource of `resource_type` (`training-job`,
    `endpoint`): what a feature's sweep compares with its live resources."""
    marker = f":{resource_type}/"
    grants = ContainerGrant.objects.filter(holder__contains=marker).values_list("holder", flat=True)
    keys = AccessKey.objects.filter(issued_for__contains=marker).values_list("issued_for", flat=True)
    return set(grants) | set(keys)


def revoke_ended(listed: set[str], live: set[str]) -> None:
    """Revoke the holders in `listed` (from `holders`, read BEFORE `live`, so that a holder
    created meanwhile is never taken for an ended one) that are not live."""
    for holder in listed - live:
        revoke(holder)

