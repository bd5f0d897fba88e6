from django.apps import AppConfig


class CapacityConfig(AppConfig):
    # The label stays "workers": the tables, the migration history and foreign keys name it.
    name = "capacity"
    label = "workers"
    verbose_name = "Capacity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Connects the Celery worker start-up: node registration, its own queue, heartbeats.
        from capacity import node_agent  # noqa: F401
