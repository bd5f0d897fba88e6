"""The single writer of a tuning job's status: a compare-and-set on the status the caller last
saw, so that StopHyperParameterTuningJob and the worker never overwrite each other. Terminal
states absorb."""
import logging

from django.utils import timezone

from reconcile import endings
from tuning.models import HyperParameterTuningJob
from tuning.models import TuningJobStatus as Status

log = logging.getLogger(__name__)

ALLOWED = {
    Status.IN_PROGRESS: frozenset({Status.COMPLETED, Status.FAILED, Status.STOPPING}),
    Status.STOPPING: frozenset({Status.STOPPED, Status.FAILED}),
}
ENDS = frozenset({Status.COMPLETED, Status.FAILED, Status.STOPPED})


class IllegalTransition(Exception):
    pass


def transition(job: HyperParameterTuningJob, target: str, **fields) -> bool:
    """Move `job` from the status it was loaded in to `target`; False if someone moved it first.
    On success the in-memory `job` follows."""
    source = job.status
    if target not in ALLOWED.get(source, frozenset()):
        raise IllegalTransition(f"{job.name}: {source} -> {target}")
    now = timezone.now()
    changes = dict(status=target, last_modified_time=now, **fields)
    if target in ENDS:
        changes["end_time"] = now
    if not HyperParameterTuningJob.objects.filter(pk=job.pk, status=source).update(**changes):
        return False
    for name, value in changes.items():
        setattr(job, name, value)
    log.info("tuning job %s: %s -> %s", job.name, source, target)
    if target in ENDS:
        endings.ended(job.name)
    return True
