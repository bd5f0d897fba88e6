from django.apps import AppConfig


class DevstackConfig(AppConfig):
    # An app only so that `manage.py runstack` exists; it has no models.
    name = "devstack"
    verbose_name = "Sageport development stack"
