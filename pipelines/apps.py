from django.apps import AppConfig


class PipelinesConfig(AppConfig):
    name = "pipelines"
    label = "pipelines"
    verbose_name = "SageMaker Model Building Pipelines"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The handlers, the taggable resource and the sweeper's share.
        from accounts.tagging import register_taggable
        from pipelines import operations, tasks  # noqa: F401
        from pipelines.models import Pipeline
        from reconcile import endings, sweeper

        register_taggable("pipeline", Pipeline, "arn")
        sweeper.register(tasks.sweep_pipeline_executions)
        # A step's job that ends wakes its execution (instead of its next poll finding it).
        endings.register(tasks.nudge_for_resource)
