from django.apps import AppConfig


class BatchTransformConfig(AppConfig):
    name = "batchtransform"
    label = "batchtransform"
    verbose_name = "Batch transform"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the transform-job handlers with the protocol registry, the taggable resource,
        # the sweeper's share (jobs whose worker died are run again; leftovers are reaped), and
        # the GPUs ended jobs still hold, which hosting waits for rather than failing a fleet.
        from accounts.tagging import register_taggable
        from batchtransform import operations, placement, tasks  # noqa: F401
        from batchtransform.models import TransformJob
        from capacity import gpus
        from reconcile import sweeper

        register_taggable("transform-job", TransformJob, "transform_job_arn")
        sweeper.register(tasks.sweep_transform)
        gpus.register_release_pending(placement.gpus_of_ended_jobs_pending)
