from django.apps import AppConfig


class ElasticConfig(AppConfig):
    name = "elastic"
    label = "elastic"
    verbose_name = "HyperPod elastic training"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The operator's sweep (lost messages, TTLs) runs with the sweeper.
        from elastic import tasks
        from reconcile import sweeper

        sweeper.register(tasks.sweep_hyperpod_jobs)
