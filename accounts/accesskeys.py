"""Access keys: creation, and the credential resolver the SigV4 verifiers call
(`settings.SAGEPORT_CREDENTIAL_RESOLVER`: `resolve_signing_key`)."""

import secrets
import string
import time
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from accounts.models import AccessKey, account_id_validator
from protocol.errors import ExpiredToken
from protocol.sigv4 import TEMPORARY_KEY_PREFIX

_ID_ALPHABET = string.ascii_uppercase + string.digits
_SECRET_ALPHABET = string.ascii_letters + string.digits + "+/"


# Known keys, remembered briefly: every request (InvokeEndpoint's data path included) resolves
# its key, and the database read was the largest share of a request's cost. Only hits are
# remembered, so a new key works at once; a revoked key stops within the TTL. While the database
# fails, a key it confirmed within the last SAGEPORT_ACCESS_KEY_OUTAGE_SECONDS is still accepted
# (a revocation needs the database anyway), so that endpoints keep serving through a short outage.
# An expiring key (a container's) is refused from its expiry on, cached or not.
# key id -> (when confirmed, its expiry, resolution)
_known: dict[str, tuple[float, datetime | None, tuple[str, str]]] = {}


def resolve_access_key(access_key_id: str) -> tuple[str, str] | None:
    """(secret access key, account id) of an active key that has not expired, or None."""
    now = time.monotonic()
    cached = _known.get(access_key_id)
    if cached and _unexpired(cached[1]) and now - cached[0] < settings.SAGEPORT_ACCESS_KEY_CACHE_SECONDS:
        return cached[2]
    try:
        key = AccessKey.objects.filter(access_key_id=access_key_id, active=True).first()
    except DatabaseError:
        if cached and _unexpired(cached[1]) and now - cached[0] < settings.SAGEPORT_ACCESS_KEY_OUTAGE_SECONDS:
            return cached[2]
        raise
    if key is None or not _unexpired(key.expires_at):
        _known.pop(access_key_id, None)
        return None
    resolved = (key.secret_access_key, key.account_id)
    _known[access_key_id] = (now, key.expires_at, resolved)
    return resolved


def resolve_signing_key(access_key_id: str) -> tuple[str, str] | None:
    """The resolver of the SigV4 verifiers (`settings.SAGEPORT_CREDENTIAL_RESOLVER`: the API, the
    data plane, the S3 gateway): `resolve_access_key`, except that STS's temporary credentials
    past their expiry raise ExpiredToken, AWS's answer for them, until the sweeper deletes them
    (unknown from then on). Looked for only when resolution failed: a valid key costs nothing."""
    resolved = resolve_access_key(access_key_id)
    if resolved is None and access_key_id.startswith(TEMPORARY_KEY_PREFIX):
        if AccessKey.objects.filter(access_key_id=access_key_id, active=True).exists():
            raise ExpiredToken("The security token included in the request is expired")
    return resolved


def _unexpired(expires_at: datetime | None) -> bool:
    return expires_at is None or timezone.now() < expires_at


# AWS's prefix of a long-term key (temporary credentials': sigv4.TEMPORARY_KEY_PREFIX).
LONG_TERM_PREFIX = "AKIA"


def create_access_key(
    account_id: str,
    *,
    default: bool = False,
    expires_at: datetime | None = None,
    issued_for: str = "",
    principal: str = "",
    id_prefix: str = LONG_TERM_PREFIX,
) -> AccessKey:
    account_id_validator(account_id)
    return AccessKey.objects.create(
        access_key_id=id_prefix + _random(_ID_ALPHABET, 16),
        secret_access_key=_random(_SECRET_ALPHABET, 40),
        account_id=account_id,
        is_default=default,
        expires_at=expires_at,
        issued_for=issued_for,
        principal=principal,
    )


# `AccessKey.principal` of a role session: identity/principals.py reads it as STS names the caller.
ASSUMED_ROLE_PREFIX = "assumed-role/"


def assumed_role_principal(role_name: str, session_name: str) -> str:
    """What `AccessKey.principal` holds for a session of `role_name`."""
    return f"{ASSUMED_ROLE_PREFIX}{role_name}/{session_name}"


def ensure_default_access_key() -> AccessKey:
    """The default key of `settings.SAGEPORT_DEFAULT_ACCOUNT_ID`, created on first use."""
    existing = AccessKey.objects.filter(is_default=True).first()
    if existing:
        return existing
    try:
        with transaction.atomic():
            return create_access_key(settings.SAGEPORT_DEFAULT_ACCOUNT_ID, default=True)
    except IntegrityError:
        # Another process created it between our read and our insert.
        return AccessKey.objects.get(is_default=True)


def _random(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))
