from django.apps import AppConfig


class ElasticConfig(AppConfig):
    name = "elastic"
    label = "elastic"
    verbose_name = "HyperPod elastic training"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The operator's sweep (lost messages, TTLs, orphans) runs with the sweeper; training jobs
        # waiting for GPUs may take them back from lower-priority elastic jobs; a replica that
        # exits has its job looked at at once; a node that registers (again, after it was lost)
        # removes the replicas of the jobs moved off it, and its GPUs, like GPUs freed by anyone,
        # have the jobs that may take them looked at at once; so is a job a preemption cuts.
        from capacity import freed, nodes, preemption
        from elastic import planner, reaper, tasks
        from reconcile import container_events, sweeper
        from runtime import labels

        sweeper.register(tasks.sweep_hyperpod_jobs)
        container_events.register(labels.ELASTIC_ROLE, tasks.nudge_for_container, actions=("die",))
        preemption.register_reclaimer(planner.reclaim_for_others)
        nodes.on_registered(reaper.reap_elastic_orphans)
        nodes.on_registered(tasks.nudge_for_registered_node)
        freed.on_freed(tasks.nudge_for_capacity)
        planner.on_target_cut(tasks.nudge)
