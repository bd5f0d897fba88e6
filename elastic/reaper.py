"""Removes what an ended or deleted HyperPodPyTorchJob left behind after a crash between a decision
and its clean-up: replica containers no replica row owns (a finished job keeps its containers
only under cleanPodPolicy None, until it is deleted), job networks of deleted jobs, and the
credentials of jobs no longer running. Only this installation's resources: they carry its stack.
A container is owned by its replica row only on the replica's node (its `sageport.node` label),
and only if it started after the row (`replicas.owns`): a node declared lost that comes back
finds the containers of the jobs moved off it disowned, and the old pods of slots given again
(to it or elsewhere) too, and removes them when it registers again (ElasticConfig.ready
registers this with capacity/nodes).

The engine is listed BEFORE the database is read: a replica row always exists before its
container, so a container created meanwhile is never taken for an orphan."""
from django.conf import settings

from accounts import container_credentials
from elastic import replicas
from elastic.models import FINISHED_PHASES, ElasticReplica, HyperPodJob
from runtime import labels
from runtime.docker import get_runtime


def reap_elastic_orphans() -> None:
    runtime = get_runtime()
    selector = {labels.ROLE: labels.ELASTIC_ROLE, labels.STACK: settings.SAGEPORT_STACK_ID}
    found_containers = runtime.find(selector)
    found_networks = runtime.find_networks(selector)
    credential_holders = container_credentials.holders("hyperpod-pytorch-job")

    jobs = {replicas.holder_arn(job): job for job in HyperPodJob.objects.all()}
    owned = {(name, node): created for name, node, created
             in ElasticReplica.objects.values_list("container_name", "node__name", "created_at")}
    for state in found_containers:
        job = jobs.get(state.labels.get(labels.RESOURCE, ""))
        created = owned.get((state.name, state.labels.get(labels.NODE)))
        mine = created is not None and replicas.owns(created, state)
        if job is None or (job.phase not in FINISHED_PHASES and not mine):
            runtime.remove(state.name)
    live_networks = {name for job in jobs.values()
                     for name in (replicas.network_name(job), replicas.overlay_name(job))}
    for network in found_networks:
        if network not in live_networks:
            runtime.remove_network(network)
    running = {arn for arn, job in jobs.items() if job.phase not in FINISHED_PHASES}
    container_credentials.revoke_ended(credential_holders, running)
