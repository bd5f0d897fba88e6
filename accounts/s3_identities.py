"""The bundled S3 store's identities, computed from the usable access keys and kept in sync.

One SeaweedFS identity per account (`sageport-<account>`) holds every usable key of that account.
Its grants are the account's bucket namespace: buckets named `<account>-…`, which its keys may
create and use, and the SageMaker SDK's default buckets `sagemaker-<region>-<account>` (created by
the platform). SeaweedFS authorises by such name grants only (it records who created a bucket,
but does not consult it for object access), so the namespace is what keeps one account's keys
out of another's buckets. A prefix pattern is safe; a suffix one would not be: SeaweedFS matches
a pattern against `bucket/key`, so `*-<account>` would also match another bucket's keys.

The platform's own key (`SAGEPORT_S3_ACCESS_KEY_ID`) is SeaweedFS's admin, given to it at start
(`devstack.stack.seaweedfs_spec`), and is never written here.

`sync()` runs after every change of an access key (signals, on commit), from the sweeper (keys
changed by a bulk update, a sync that failed while the store was down), and when the stack
starts; it writes only what differs, so a sync with nothing to do is one listing."""
import json
import logging

import boto3
from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from accounts.models import AccessKey
from storage import seaweedfs_iam

log = logging.getLogger(__name__)

IDENTITY_PREFIX = "sageport-"


def usable_keys():
    return AccessKey.objects.filter(active=True).order_by("account_id", "access_key_id")


def default_bucket_regions() -> list[str]:
    """Every region whose SageMaker default bucket an account may use: the regions botocore knows
    for S3, and the stack's own (which may be a name botocore does not list)."""
    regions = set(boto3.session.Session().get_available_regions("s3"))
    return sorted(regions | {settings.SAGEPORT_REGION})


def account_grants(account_id: str, regions: list[str]) -> list[str]:
    """SeaweedFS actions of an account's identity: admin of its namespace and default buckets."""
    return [f"Admin:{account_id}-*"] + [f"Admin:sagemaker-{region}-{account_id}" for region in regions]


def desired_identities(keys, regions: list[str]) -> dict[str, bytes]:
    """Identity files (name → content) for the given keys, one per account."""
    by_account: dict[str, list[AccessKey]] = {}
    for key in keys:
        by_account.setdefault(key.account_id, []).append(key)
    files = {}
    for account_id, account_keys in sorted(by_account.items()):
        name = f"{IDENTITY_PREFIX}{account_id}"
        identity = {
            "name": name,
            "account": {"id": account_id, "display_name": account_id},
            "credentials": [
                {"access_key": key.access_key_id, "secret_key": key.secret_access_key, "status": "Active"}
                for key in account_keys
            ],
            "actions": account_grants(account_id, regions),
        }
        files[f"{name}.json"] = json.dumps(identity, sort_keys=True).encode()
    return files


def sync() -> bool:
    """Make the bundled store's identities those of the usable keys. False when there is no
    bundled store (an external S3 has its own IAM). Raises FilerError when the store fails."""
    filer_url = seaweedfs_iam.bundled_filer_url()
    if filer_url is None:
        return False
    desired = desired_identities(usable_keys(), default_bucket_regions())
    present = seaweedfs_iam.read_identities(filer_url, IDENTITY_PREFIX)
    # New and changed identities first, removals last: a key that moves never lapses.
    for name, content in desired.items():
        if present.get(name) != content:
            seaweedfs_iam.write_identity(filer_url, name, content)
            log.info("S3 identity %s written", name)
    for name in present.keys() - desired.keys():
        seaweedfs_iam.delete_identity(filer_url, name)
        log.info("S3 identity %s removed", name)
    return True


def sync_or_log() -> None:
    """`sync()` for callers that must not fail with the store (signals, the sweeper): the next
    sweep tries again."""
    try:
        sync()
    except seaweedfs_iam.FilerError as error:
        log.warning("S3 identities not synced yet: %s", error)


def _on_access_key_change(sender, **kwargs) -> None:
    transaction.on_commit(sync_or_log)


def connect_signals() -> None:
    post_save.connect(_on_access_key_change, sender=AccessKey, dispatch_uid="s3-identities-save")
    post_delete.connect(_on_access_key_change, sender=AccessKey, dispatch_uid="s3-identities-delete")
