from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    label = "clusters"
    verbose_name = "HyperPod clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the cluster handlers with the protocol registry, the taggable resources, and
        # the membership pass with the sweeper and with node registration (a node that registers
        # fills a short instance group at once); and connects the Celery worker start-up: each
        # node's worker keeps its checkpoint tier service (tier_agent).
        from accounts.tagging import register_taggable
        from capacity import nodes
        from clusters import membership, operations, tier_agent  # noqa: F401
        from clusters.models import Cluster, ClusterPolicy, PolicyKind
        from reconcile import sweeper

        register_taggable("cluster", Cluster, "cluster_arn")
        for kind in PolicyKind:
            register_taggable(kind.value, ClusterPolicy, "arn")
        sweeper.register(membership.settle_all)
        nodes.on_registered(membership.settle_all)
