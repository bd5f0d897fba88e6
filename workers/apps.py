from django.apps import AppConfig


class WorkersConfig(AppConfig):
    name = "workers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Connects the Celery worker start-up: node registration, its own queue, heartbeats.
        from workers import node_agent  # noqa: F401
