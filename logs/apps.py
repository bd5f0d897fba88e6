from django.apps import AppConfig


class LogsConfig(AppConfig):
    # The label stays "cloudwatch": the tables, the migration history and foreign keys name it.
    name = "logs"
    label = "cloudwatch"
    verbose_name = "CloudWatch Logs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the Logs_20140328 and CloudWatch metrics handlers.
        from logs import metric_operations, operations, retention  # noqa: F401
        from reconcile import sweeper

        sweeper.register(retention.purge_expired_events)
