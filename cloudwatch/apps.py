from django.apps import AppConfig


class CloudwatchConfig(AppConfig):
    name = "cloudwatch"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from cloudwatch import operations  # noqa: F401  (registers the Logs_20140328 handlers)
