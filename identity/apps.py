from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    label = "identity"
    verbose_name = "STS and IAM"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.db.models.signals import post_save

        # Registers the STS and IAM handlers (query protocol).
        from accounts.models import ContainerGrant
        from identity import iam, roles, sts  # noqa: F401

        post_save.connect(roles.record_execution_role, sender=ContainerGrant)
