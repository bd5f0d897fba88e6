"""Where a transform job's instances run, and the GPUs they hold.

All instances of a job go on one node (capacity/single_node.py), whose worker runs the job
(batchtransform/tasks.py routes it there): an NVIDIA instance type's GPUs come from that node's
inventory, exclusively, as a training or processing instance's do; CPU and memory limits are the
instance type's, capped at the node's. A job that no node could ever hold fails with SageMaker's
`ResourceLimitExceeded`; one that fits later waits, InProgress, as a training job waits in
Pending (SageMaker's transform jobs have no status of their own for that). What a job holds is
given back when it ends (completed, failed or stopped), when the sweeper finds an ended job still
holding (a worker that died between its end and the release), and when its node is lost (the job
then runs again elsewhere: batchtransform/runner.py)."""

from batchtransform.models import TERMINAL_STATUSES, TransformJob
from capacity import fitting, instance_types, single_node
from capacity.models import GpuAllocation, Placement
from jobs.workspace import host_names


def demand_of(job: TransformJob) -> fitting.Demand:
    resources = job.request["TransformResources"]
    return fitting.Demand(instance_types.lookup(resources["InstanceType"]), resources["InstanceCount"])


def place(job: TransformJob) -> single_node.Decision:
    demand = demand_of(job)
    return single_node.place({"transform_job": job}, demand, host_names(demand.count))


def node_of(job_id: int) -> str | None:
    return single_node.node_of({"transform_job_id": job_id})


def placement_of(job: TransformJob, host: str) -> Placement:
    return single_node.placement_of({"transform_job": job}, host)


def release(job: TransformJob) -> None:
    single_node.release({"transform_job": job})


def release_finished() -> None:
    """Free what ended jobs still hold (a crash between the terminal status and the release)."""
    Placement.objects.filter(transform_job__transform_job_status__in=TERMINAL_STATUSES).delete()


def release_lost() -> None:
    """Free what jobs hold on lost nodes (their worker is gone with its node): once their lease
    expires they run again from the start, wherever they fit."""
    held = Placement.objects.filter(transform_job__isnull=False, node__lost_at__isnull=False)
    job_ids = set(held.values_list("transform_job_id", flat=True))
    Placement.objects.filter(transform_job_id__in=job_ids).delete()


def gpus_of_ended_jobs_pending(node_name: str) -> bool:
    """Whether ended transform jobs still hold GPUs of the node (registered with capacity.gpus)."""
    held = GpuAllocation.objects.filter(node__name=node_name)
    return held.filter(placement__transform_job__transform_job_status__in=TERMINAL_STATUSES).exists()
