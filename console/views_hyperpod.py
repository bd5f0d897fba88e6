"""The console's HyperPod pages: clusters (their instance groups, nodes and checkpoint tier) and
the elastic HyperPodPyTorchJobs (phase, world size, restarts, resizes), read through the
presenters the API answers with."""

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from clusters import presenters as cluster_presenters
from clusters.models import Cluster, ClusterMember
from console.addresses import resource_view
from console.deletion import delete
from console.viewer import Viewer, console_view
from elastic.models import HyperPodJob

PAGE_SIZE = 50


@console_view
def cluster_list(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    clusters = viewer.visible(Cluster.objects.all()).order_by("-creation_time", "-pk")
    jobs = viewer.visible(HyperPodJob.objects.all()).order_by("-created_at", "-pk")
    context = {
        "clusters": Paginator(clusters, PAGE_SIZE).get_page(request.GET.get("page")),
        "jobs": jobs[:PAGE_SIZE],
    }
    return render(request, "console/hyperpod.html", context)


@resource_view(Cluster)
def cluster_detail(request: HttpRequest, viewer: Viewer, cluster: Cluster) -> HttpResponse:
    members = ClusterMember.objects.filter(group__cluster=cluster).select_related("group__cluster", "node")
    context = {
        "cluster": cluster,
        "described": cluster_presenters.describe_cluster(cluster),
        "nodes": [
            {**cluster_presenters.node_summary(member), "NodeName": member.node.name}
            for member in members.order_by("group__position", "instance_id")
        ],
    }
    return render(request, "console/cluster.html", context)


@resource_view(HyperPodJob)
def job_detail(request: HttpRequest, viewer: Viewer, job: HyperPodJob) -> HttpResponse:
    status = job.status
    context = {
        "job": job,
        "conditions": status.get("conditions", []),
        "scaling": status.get("elasticScalingStatus"),
        "status": status,
    }
    return render(request, "console/hyperpod_job.html", context)


@resource_view(Cluster)
@require_POST
def cluster_delete(request: HttpRequest, viewer: Viewer, cluster: Cluster) -> HttpResponse:
    return delete(
        request, viewer, cluster, ("DeleteCluster", {"ClusterName": cluster.cluster_name}),
        ("console:cluster", "console:hyperpod"),
        f"Deleting the cluster {cluster.cluster_name}: its nodes are released.",
    )
