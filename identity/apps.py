from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    label = "identity"
    verbose_name = "STS and IAM"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the STS and IAM handlers (query protocol).
        from identity import iam, sts  # noqa: F401
