from django.apps import AppConfig


class TuningConfig(AppConfig):
    name = "tuning"
    label = "tuning"
    verbose_name = "Hyperparameter tuning jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The handlers, the taggable resource and the sweeper's share.
        from accounts.tagging import register_taggable
        from reconcile import sweeper
        from tuning import operations, tasks  # noqa: F401
        from tuning.models import HyperParameterTuningJob

        register_taggable("hyper-parameter-tuning-job", HyperParameterTuningJob, "arn")
        sweeper.register(tasks.sweep_tuning)
