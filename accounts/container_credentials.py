"""Role credentials for containers, handed out the way ECS and SageMaker do: a container is given
the URL of a credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI) and a token
(AWS_CONTAINER_AUTHORIZATION_TOKEN); botocore, the AWS CLI and every AWS SDK fetch short-lived
keys there, and fetch again before they expire.

A training job or an endpoint (the holder, by ARN) gets one `ContainerGrant` when its first
container is specified; each fetch answers a key of the holder's account that is valid for at
least half of SAGEPORT_CONTAINER_CREDENTIALS_SECONDS (a new one is minted when the newest is past
that), so a container that refreshes before expiry, as the SDKs do 15 minutes ahead, always gets
a key with time left. The holder's end deletes its grant and every key it yielded (`revoke`);
the sweeper deletes keys past their expiry (`delete_expired_keys`) and the grants of holders that
ended while nobody revoked them (`revoke_ended`, called by the features that know what is live).

The keys are plain access keys with an expiry, without a session token (`Token` is empty):
SigV4 verification needs none, expiry and revocation belong to the key itself, and the bundled
S3 (SeaweedFS) refuses any request that carries a session token for a key it knows (it takes the
token for one of its own STS tokens), so a token would only make S3 unusable. Never the stack's
own S3 key: these are the account's keys, usable wherever the account's user keys are."""

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.accesskeys import create_access_key
from accounts.models import AccessKey, ContainerGrant

TOKEN_BYTES = 32


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
            "Token": "",  # see the module's docstring: the keys need no session token
            "Expiration": self.expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "AccountId": self.account_id,
        }


def grant(holder: str, account_id: str) -> str:
    """The authorization token of `holder`'s containers, created on first use: every container
    of the holder (several instances, a restarted one) gets the same token."""
    existing = ContainerGrant.objects.filter(holder=holder).first()
    if existing is not None:
        return existing.token
    try:
        with transaction.atomic():
            return ContainerGrant.objects.create(
                holder=holder, account_id=account_id, token=secrets.token_urlsafe(TOKEN_BYTES)
            ).token
    except IntegrityError:  # a concurrent step created it between our read and our insert
        return ContainerGrant.objects.get(holder=holder).token


def credentials_for(token: str) -> ContainerCredentials | None:
    """A key with time left for the grant proven by `token`; None for an unknown (revoked) token."""
    found = ContainerGrant.objects.filter(token=token).first() if token else None
    if found is None:
        return None
    now = timezone.now()
    lifetime = timedelta(seconds=settings.SAGEPORT_CONTAINER_CREDENTIALS_SECONDS)
    key = (
        AccessKey.objects.filter(issued_for=found.holder, active=True, expires_at__gt=now + lifetime / 2)
        .order_by("-expires_at")
        .first()
    )
    if key is None:
        key = create_access_key(found.account_id, expires_at=now + lifetime, issued_for=found.holder)
    return ContainerCredentials(key.access_key_id, key.secret_access_key, key.account_id, key.expires_at)


def revoke(holder: str) -> None:
    """The holder ended: its token and every key it was given stop working. Rows are deleted one
    by one (not in bulk) so that whatever listens to AccessKey deletions (the S3 identities kept
    in sync with the keys) hears of each."""
    ContainerGrant.objects.filter(holder=holder).delete()
    for key in AccessKey.objects.filter(issued_for=holder):
        key.delete()


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


def delete_expired_keys() -> None:
    """The sweeper's share: expired keys are already refused; deleting them keeps the table (and
    the S3 identities derived from it) small."""
    for key in AccessKey.objects.filter(expires_at__lte=timezone.now()):
        key.delete()
