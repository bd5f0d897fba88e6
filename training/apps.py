from django.apps import AppConfig


class TrainingConfig(AppConfig):
    # The label stays "jobs": the tables, the migration history and foreign keys name it.
    name = "training"
    label = "jobs"
    verbose_name = "Training jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the training-job handlers with the protocol registry, the taggable and
        # searchable resource, the sweeper's share, the GPUs that ended jobs are about to give
        # back, the weights of the jobs waiting for GPUs (elastic jobs do not grow past them), the
        # clean-up of a node that registers again, the CloudWatch dimensions of the jobs' metrics, and the
        # container events that make a job looked at at once (an exit: its end or its failure).
        from accounts.tagging import register_taggable
        from capacity import gpus, nodes, preemption
        from logs.metrics import register_point_namespace
        from protocol.search import register_searchable
        from reconcile import container_events, sweeper
        from runtime import labels
        from training import operations, priority, reaper, scheduler, search, tasks  # noqa: F401
        from training.metrics import TRAINING_JOB_DIMENSION, TRAINING_JOBS_NAMESPACE
        from training.models import TrainingJob

        register_taggable("training-job", TrainingJob, "training_job_arn")
        register_searchable("TrainingJob", search.search_training_jobs)
        sweeper.register(tasks.sweep_training)
        gpus.register_release_pending(scheduler.gpus_of_ended_jobs_pending)
        preemption.register_waiting(priority.waiting_weights)
        nodes.on_registered(reaper.remove_disowned_containers)
        register_point_namespace(TRAINING_JOBS_NAMESPACE, TRAINING_JOB_DIMENSION)
        container_events.register(labels.TRAINING_ROLE, tasks.nudge_for_container, actions=("die",))
