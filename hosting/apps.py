from django.apps import AppConfig


class HostingConfig(AppConfig):
    # The label stays "endpoints": the tables, the migration history and foreign keys name it.
    name = "hosting"
    label = "endpoints"
    verbose_name = "Hosting"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the hosting handlers with the protocol registry, the taggable resources and
        # the sweeper's share.
        from accounts.tagging import register_taggable
        from hosting import operations, tasks  # noqa: F401
        from hosting.models import Endpoint, EndpointConfig, SageMakerModel
        from reconcile import sweeper

        register_taggable("model", SageMakerModel, "model_arn")
        register_taggable("endpoint-config", EndpointConfig, "endpoint_config_arn")
        register_taggable("endpoint", Endpoint, "endpoint_arn")
        sweeper.register(tasks.sweep_hosting)
