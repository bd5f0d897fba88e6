"""Who is calling: `Authorization: Bearer <AccessKeyId>.<SecretAccessKey>`, an active access key of
the account (the kubeconfig Sageport writes carries the default key). Namespaces belong to that
account: another account's jobs are invisible. Unknown, inactive, expired or missing → 401."""

import hmac

from django.db import DatabaseError
from django.http import HttpRequest

from accounts.accesskeys import resolve_access_key
from elastic.kube.status import KubeError

_SCHEME = "bearer "


def account_of(request: HttpRequest) -> str:
    """The account id the request's bearer token belongs to; KubeError 401 otherwise."""
    header = request.headers.get("Authorization", "")
    if not header[: len(_SCHEME)].lower() == _SCHEME:
        raise _unauthorized()
    key_id, dot, secret = header[len(_SCHEME):].strip().partition(".")
    if not dot or not key_id or not secret or len(key_id) > 128:
        raise _unauthorized()
    try:
        resolved = resolve_access_key(key_id)
    except DatabaseError:
        raise KubeError(503, "ServiceUnavailable", "The credentials cannot be checked right now.") from None
    if resolved is None:
        raise _unauthorized()
    expected_secret, account_id = resolved
    if not hmac.compare_digest(expected_secret.encode(), secret.encode()):
        raise _unauthorized()
    return account_id


def _unauthorized() -> KubeError:
    return KubeError(401, "Unauthorized", "Unauthorized")
