from django.apps import AppConfig


class ElasticConfig(AppConfig):
    name = "elastic"
    label = "elastic"
    verbose_name = "HyperPod elastic training"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The operator's sweep (lost messages, TTLs, orphans) runs with the sweeper; training jobs
        # waiting for GPUs may take them back from lower-priority elastic jobs.
        from capacity import preemption
        from elastic import planner, tasks
        from reconcile import sweeper

        sweeper.register(tasks.sweep_hyperpod_jobs)
        preemption.register_reclaimer(planner.reclaim_for_others)
