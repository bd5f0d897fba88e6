from django.apps import AppConfig


class ControlplaneConfig(AppConfig):
    name = "controlplane"
    verbose_name = "Sageport control plane"
    default_auto_field = "django.db.models.BigAutoField"
