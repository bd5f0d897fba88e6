from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the training-job handlers with the protocol registry.
        from controlplane.tagging import register_taggable
        from jobs import operations  # noqa: F401
        from jobs.models import TrainingJob

        register_taggable("training-job", TrainingJob, "training_job_arn")
