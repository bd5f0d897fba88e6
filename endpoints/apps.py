from django.apps import AppConfig


class EndpointsConfig(AppConfig):
    name = "endpoints"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the hosting handlers with the protocol registry, and the taggable resources.
        from controlplane.tagging import register_taggable
        from endpoints import operations  # noqa: F401
        from endpoints.models import Endpoint, EndpointConfig, SageMakerModel

        register_taggable("model", SageMakerModel, "model_arn")
        register_taggable("endpoint-config", EndpointConfig, "endpoint_config_arn")
        register_taggable("endpoint", Endpoint, "endpoint_arn")
