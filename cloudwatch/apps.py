from django.apps import AppConfig


class CloudwatchConfig(AppConfig):
    name = "cloudwatch"
    default_auto_field = "django.db.models.BigAutoField"
