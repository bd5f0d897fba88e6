from django.apps import AppConfig


class ProcessingConfig(AppConfig):
    name = "processing"
    label = "processing"
    verbose_name = "Processing jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The handlers, the taggable resource, the sweeper's share, the GPUs that ended jobs are
        # about to give back, and the container events that make a job looked at at once.
        from accounts.tagging import register_taggable
        from capacity import gpus
        from processing import operations, placement, tasks  # noqa: F401
        from processing.kind import PROCESSING
        from processing.models import ProcessingJob
        from reconcile import container_events, sweeper

        register_taggable(PROCESSING.resource_type, ProcessingJob, "processing_job_arn")
        sweeper.register(tasks.sweep_processing)
        gpus.register_release_pending(placement.gpus_of_ended_jobs_pending)
        container_events.register(PROCESSING.role, tasks.nudge_for_container, actions=("die",))
