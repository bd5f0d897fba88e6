from django.db import models

from accounts.models import account_id_validator


class Role(models.Model):
    """An IAM role of an account: one a client created (CreateRole) or one first named by a
    GetRole or an AssumeRole (identity/roles.py says why roles exist on first reference)."""

    account_id = models.CharField(max_length=12, validators=[account_id_validator])
    role_name = models.CharField(max_length=64)
    # IAM role names are unique within an account regardless of case.
    name_key = models.CharField(max_length=64)
    path = models.CharField(max_length=512, default="/")
    role_id = models.CharField(max_length=32, unique=True)
    # As the client sent it (JSON text); answered URL-encoded, as IAM does.
    assume_role_policy_document = models.TextField()
    description = models.CharField(max_length=1000, blank=True, default="")
    max_session_duration = models.IntegerField(default=3600)
    tags = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account_id", "name_key"], name="one_role_per_name")]

    def __str__(self) -> str:
        return f"role {self.role_name} (account {self.account_id})"
