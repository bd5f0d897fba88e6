"""The priority classes that cluster policies (scheduler configs) define, as the schedulers read
them: a job names a class (e.g. a HyperPodPyTorchJob's `priorityClassName` or Kueue label), the
class's weight (0 lowest, 100 highest) orders it against other work."""
from clusters.models import ClusterPolicy, PolicyKind, PolicyStatus


def priority_weight(account_id: str, region: str, class_name: str) -> int | None:
    """The Weight of the priority class named `class_name` in the account's cluster policies in
    `region` that are not Deleted, whichever cluster they are on; when several define it, the most
    recently created policy's. None when none defines it (the caller decides what an unknown
    class means). Names are matched exactly (they are lower-case by their pattern)."""
    configs = ClusterPolicy.objects.filter(
        kind=PolicyKind.SCHEDULER_CONFIG, account_id=account_id, region=region
    )
    configs = configs.exclude(status=PolicyStatus.DELETED).order_by("-creation_time", "-pk")
    for spec in configs.values_list("spec", flat=True):
        for priority_class in spec["SchedulerConfig"].get("PriorityClasses", []):
            if priority_class["Name"] == class_name:
                return priority_class["Weight"]
    return None
