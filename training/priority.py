"""A training job's priority when GPUs are short: the priority class named by its tag
`kueue.x-k8s.io/priority-class` (the label HyperPodPyTorchJobs carry), weighed by the account's
cluster scheduler configs (clusters/priorities.py); no tag, or a class no config defines, weighs 0.

A job that waits for GPUs asks lower-weight elastic work to give them back
(capacity/preemption.py): elastic jobs shrink, and lower-weight HyperPodPyTorchJobs may be
evicted. Training jobs themselves are never preempted: SageMaker has no such thing, and a stopped
job could not resume where it was."""
from capacity import preemption
from clusters.priorities import priority_weight
from training.models import TrainingJob, TrainingJobStatus
from training.scheduler import WAITING_SECONDARY_STATUSES, demand_of

PRIORITY_TAG = "kueue.x-k8s.io/priority-class"


def weight_of(job: TrainingJob) -> int:
    name = next((tag["Value"] for tag in job.tags if tag.get("Key") == PRIORITY_TAG), "")
    return (priority_weight(job.account_id, job.region, name) or 0) if name else 0


def ask_for_gpus(job: TrainingJob) -> str | None:
    """Ask lower-weight work for the GPUs the job waits for; what is under way, or None."""
    demand = demand_of(job)
    if not demand.gpus:
        return None
    request = preemption.GpuRequest(demand.gpus * demand.count, weight_of(job), job.training_job_name)
    return preemption.reclaim(request)


def waiting_weights() -> list[int]:
    """The weights of the jobs waiting for GPUs (registered with capacity.preemption)."""
    waiting = TrainingJob.objects.filter(
        training_job_status=TrainingJobStatus.IN_PROGRESS,
        secondary_status__in=WAITING_SECONDARY_STATUSES,
        placements__isnull=True,
    )
    return [weight_of(job) for job in waiting if demand_of(job).gpus]
