from django.apps import AppConfig


class AccountsConfig(AppConfig):
    # The label stays "controlplane": the AccessKey table and its migration history name it.
    name = "accounts"
    label = "controlplane"
    verbose_name = "Sageport accounts"
    default_auto_field = "django.db.models.BigAutoField"
