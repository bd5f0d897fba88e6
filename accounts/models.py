from django.core.validators import RegexValidator
from django.db import models

account_id_validator = RegexValidator(r"^\d{12}$", "An account id is 12 digits.")


class AccessKey(models.Model):
    """An AWS-style access key pair. Requests signed with it act in its account (ARNs carry
    the account id)."""

    access_key_id = models.CharField(max_length=128, unique=True)
    secret_access_key = models.CharField(max_length=128)
    account_id = models.CharField(max_length=12, validators=[account_id_validator])
    is_default = models.BooleanField(default=False)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A container's short-lived key (accounts/container_credentials.py): refused from this moment
    # on, and deleted by the sweeper. None: a user's key, valid until deactivated or deleted.
    expires_at = models.DateTimeField(null=True, blank=True)
    # The ARN of the training job or endpoint whose containers were given the key ("" for a
    # user's key); its keys are deleted when it ends.
    issued_for = models.CharField(max_length=2048, blank=True, default="", db_index=True)
    # Whom the key acts as, after the account's `arn:aws:...::<account>:` (identity/principals.py):
    # `assumed-role/<role>/<session>` for STS's temporary credentials; "" for the account's own.
    principal = models.CharField(max_length=512, blank=True, default="")

    class Meta:
        constraints = [
            # At most one default key, even when several processes start at once.
            models.UniqueConstraint(
                fields=["is_default"], condition=models.Q(is_default=True), name="one_default_access_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.access_key_id} (account {self.account_id})"


class ContainerGrant(models.Model):
    """The right of one training job's or endpoint's containers to fetch short-lived keys of its
    account, acting as `role_arn`, from the container-credentials endpoint, proven by `token`
    (AWS_CONTAINER_AUTHORIZATION_TOKEN). Deleted, with the keys it yielded, when the holder ends.
    A holder has one grant per role: an endpoint's variants may serve models of different roles."""

    holder = models.CharField(max_length=2048)  # the training job's or endpoint's ARN
    account_id = models.CharField(max_length=12, validators=[account_id_validator])
    # The execution role the keys act as (a job's RoleArn, a model's ExecutionRoleArn); "" when
    # the holder names none: the account's own role (identity/principals.py).
    role_arn = models.CharField(max_length=2048, blank=True, default="")
    token = models.CharField(max_length=128, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["holder", "role_arn"], name="one_grant_per_holder_role")
        ]

    def __str__(self) -> str:
        return f"container credentials of {self.holder}"


class BucketOwner(models.Model):
    """Which account owns a bucket of the bundled S3 store, as the S3 gateway decides access:
    a row per bucket a tenant created (or the stack created for it); a bucket with no row belongs
    to the platform only."""

    bucket = models.CharField(max_length=63, unique=True)
    account_id = models.CharField(max_length=12, validators=[account_id_validator])
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.bucket} (account {self.account_id})"
