from django.apps import AppConfig


class TrainingConfig(AppConfig):
    # The label stays "jobs": the tables, the migration history and foreign keys name it.
    name = "training"
    label = "jobs"
    verbose_name = "Training jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the training-job handlers with the protocol registry, the taggable resource,
        # the sweeper's share, the GPUs that ended jobs are about to give back, and the clean-up of
        # a node that registers again.
        from accounts.tagging import register_taggable
        from capacity import gpus, nodes
        from reconcile import sweeper
        from training import operations, reaper, scheduler, tasks  # noqa: F401
        from training.models import TrainingJob

        register_taggable("training-job", TrainingJob, "training_job_arn")
        sweeper.register(tasks.sweep_training)
        gpus.register_release_pending(scheduler.gpus_of_ended_jobs_pending)
        nodes.on_registered(reaper.remove_disowned_containers)
