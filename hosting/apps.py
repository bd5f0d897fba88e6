from django.apps import AppConfig


class HostingConfig(AppConfig):
    # The label stays "endpoints": the tables, the migration history and foreign keys name it.
    name = "hosting"
    label = "endpoints"
    verbose_name = "Hosting"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the hosting handlers with the protocol registry, the taggable resources and
        # the sweeper's share, and what a node removes when it registers.
        from accounts.tagging import register_taggable
        from capacity import nodes
        from hosting import operations, reaper, tasks  # noqa: F401
        from hosting.models import Endpoint, EndpointConfig, SageMakerModel
        from reconcile import sweeper

        register_taggable("model", SageMakerModel, "model_arn")
        register_taggable("endpoint-config", EndpointConfig, "endpoint_config_arn")
        register_taggable("endpoint", Endpoint, "endpoint_arn")
        sweeper.register(tasks.sweep_hosting)
        # A node that comes back removes the containers whose rows went while it was lost.
        nodes.on_registered(reaper.reap_serving_orphans)
