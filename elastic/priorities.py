"""How much a replica weighs when capacity is short: the weight (0-100, higher wins) of its
priority class in the account's cluster scheduler configs (CreateClusterSchedulerConfig).

A replica's class is its pod template's `priorityClassName`, else the job's
`kueue.x-k8s.io/priority-class` label; a class no scheduler config defines weighs 0, as does a
replica without one. A job competes for capacity with the weight of the replicas it cannot run
without (its smallest world): a two-level job whose base group is high-priority waits and
preempts as a high-priority job, while its elastic group is what lower weights can take back."""
from clusters.priorities import priority_weight
from elastic import sizing
from elastic.models import HyperPodJob
from elastic.spec import JobSpec, ReplicaGroup


def class_weight(job: HyperPodJob, class_name: str) -> int:
    if not class_name:
        return 0
    return priority_weight(job.account_id, job.region, class_name) or 0


def replica_weight(job: HyperPodJob, spec: JobSpec, group: ReplicaGroup) -> int:
    return class_weight(job, group.priority_class or spec.priority_class)


def job_weight(job: HyperPodJob, spec: JobSpec) -> int:
    smallest = sizing.allowed_sizes(spec)[0]
    weights = [replica_weight(job, spec, group) for group, _ in sizing.slots(spec, smallest)]
    return min(weights, default=class_weight(job, spec.priority_class))
