"""What a job's placements say about its instances' containers, whoever the job is (a training or
a processing job): each feature passes the placements of one of its jobs."""
from django.db.models import QuerySet
from django.utils import timezone


def mark_started(placements: QuerySet, hosts: list[str]) -> None:
    """The containers of `hosts` were created: from now on, a missing one has vanished."""
    not_yet = placements.filter(host__in=hosts, container_started_at__isnull=True)
    not_yet.update(container_started_at=timezone.now())


def started_hosts(placements: QuerySet) -> set[str]:
    """Instances whose container was created: a missing one of these has vanished."""
    return set(placements.filter(container_started_at__isnull=False).values_list("host", flat=True))
