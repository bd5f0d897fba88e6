from django.apps import AppConfig


class GatewayConfig(AppConfig):
    name = "gateway"
    verbose_name = "What containers reach"

    def ready(self):
        # Connects the Celery worker start-up: each node's worker runs the forwarder.
        from gateway import forwarder_agent  # noqa: F401
