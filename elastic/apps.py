from django.apps import AppConfig


class ElasticConfig(AppConfig):
    name = "elastic"
    label = "elastic"
    verbose_name = "HyperPod elastic training"
    default_auto_field = "django.db.models.BigAutoField"
