"""Places processing jobs on worker nodes: all instances of a job on one node, with GPUs of their
own (capacity/single_node.py: a job that fits no node even when empty fails at once, `NeverFits`;
one that would fit later waits, `Waiting`, the job staying Pending), and what ended jobs still
hold."""
from capacity import fitting, instance_types, instances, single_node
from capacity.models import GpuAllocation, Placement
from jobs.workspace import host_names
from processing.models import TERMINAL_STATUSES, ProcessingJob


def demand_of(job: ProcessingJob) -> fitting.Demand:
    cluster = job.request["ProcessingResources"]["ClusterConfig"]
    return fitting.Demand(instance_types.lookup(cluster["InstanceType"]), cluster["InstanceCount"])


def place(job: ProcessingJob) -> single_node.Decision:
    demand = demand_of(job)
    return single_node.place({"processing_job": job}, demand, host_names(demand.count))


def node_of(job_id: int) -> str | None:
    """The node of the job's instances; None while the job is not placed."""
    return single_node.node_of({"processing_job_id": job_id})


def placement_of(job: ProcessingJob, host: str) -> Placement:
    return single_node.placement_of({"processing_job": job}, host)


def release(job: ProcessingJob) -> None:
    single_node.release({"processing_job": job})


def release_finished() -> None:
    """Free what ended jobs still hold (a crash between the terminal status and the release)."""
    Placement.objects.filter(processing_job__processing_job_status__in=TERMINAL_STATUSES).delete()


def gpus_of_ended_jobs_pending(node_name: str) -> bool:
    """Whether ended processing jobs still hold GPUs of the node (registered with capacity.gpus)."""
    held = GpuAllocation.objects.filter(node__name=node_name)
    return held.filter(placement__processing_job__processing_job_status__in=TERMINAL_STATUSES).exists()


def mark_started(job: ProcessingJob, hosts: list[str]) -> None:
    instances.mark_started(Placement.objects.filter(processing_job=job), hosts)


def started_hosts(job: ProcessingJob) -> set[str]:
    return instances.started_hosts(Placement.objects.filter(processing_job=job))


def placed_at(job: ProcessingJob):
    """When the job got its capacity (None while it has none)."""
    placements = Placement.objects.filter(processing_job=job).order_by("placed_at")
    return placements.values_list("placed_at", flat=True).first()
