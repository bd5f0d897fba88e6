from django.apps import AppConfig


class HostingConfig(AppConfig):
    # The label stays "endpoints": the tables, the migration history and foreign keys name it.
    name = "hosting"
    label = "endpoints"
    verbose_name = "Hosting"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the hosting handlers with the protocol registry, the taggable resources and
        # the sweeper's share, what a node removes when it registers, and the container events
        # that make an endpoint looked at at once (a serving container dying or turning unhealthy).
        from accounts.tagging import register_taggable
        from capacity import nodes
        from hosting import component_operations, operations, reaper, tasks  # noqa: F401
        from hosting.models import Endpoint, EndpointConfig, InferenceComponent, SageMakerModel
        from reconcile import container_events, sweeper
        from runtime import labels

        register_taggable("model", SageMakerModel, "model_arn")
        register_taggable("endpoint-config", EndpointConfig, "endpoint_config_arn")
        register_taggable("endpoint", Endpoint, "endpoint_arn")
        register_taggable("inference-component", InferenceComponent, "inference_component_arn")
        sweeper.register(tasks.sweep_hosting)
        # A node that comes back removes the containers whose rows went while it was lost.
        nodes.on_registered(reaper.reap_serving_orphans)
        container_events.register(
            labels.SERVING_ROLE, tasks.nudge_for_container, actions=("die", "health_status")
        )
