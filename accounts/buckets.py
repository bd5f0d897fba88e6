"""Who owns each bucket of the bundled S3 store (the S3 gateway's access decisions read it)."""
from django.db import IntegrityError, transaction

from accounts.models import BucketOwner


def owner_of(bucket: str) -> str | None:
    """The owning account's id, or None (a platform bucket, or none at all)."""
    return BucketOwner.objects.filter(bucket=bucket).values_list("account_id", flat=True).first()


def claim(bucket: str, account_id: str) -> bool:
    """Record `account_id` as the owner unless the bucket has one; True when it is now the owner
    by this call (a unique row, so two accounts racing for a name cannot both win)."""
    try:
        with transaction.atomic():
            BucketOwner.objects.create(bucket=bucket, account_id=account_id)
    except IntegrityError:
        return False
    return True


def ensure_owner(bucket: str, account_id: str) -> None:
    """Record the owner of a bucket the platform creates for an account (its SDK default bucket)."""
    BucketOwner.objects.get_or_create(bucket=bucket, defaults={"account_id": account_id})


def release(bucket: str) -> None:
    """Forget the owner of a deleted bucket (its name is free again)."""
    BucketOwner.objects.filter(bucket=bucket).delete()


def owned_by(account_id: str) -> set[str]:
    return set(BucketOwner.objects.filter(account_id=account_id).values_list("bucket", flat=True))
