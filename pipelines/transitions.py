"""The single writer of an execution's status: a compare-and-set on the status the caller last
saw, so that StopPipelineExecution and the worker never overwrite each other. Terminal states
absorb, but for RetryPipelineExecution taking a Failed execution back to Executing."""

import logging

from django.utils import timezone

from pipelines import metrics
from pipelines.models import ExecutionStatus as Status
from pipelines.models import PipelineExecution

log = logging.getLogger(__name__)

ALLOWED = {
    Status.EXECUTING: frozenset({Status.SUCCEEDED, Status.FAILED, Status.STOPPING}),
    Status.STOPPING: frozenset({Status.STOPPED, Status.FAILED}),
    Status.FAILED: frozenset({Status.EXECUTING}),
}
ENDS = frozenset({Status.SUCCEEDED, Status.FAILED, Status.STOPPED})


class IllegalTransition(Exception):
    pass


def transition(execution: PipelineExecution, target: str, **fields) -> bool:
    """Move `execution` from the status it was loaded in to `target`; False if someone moved it
    first. On success the in-memory `execution` follows."""
    source = execution.status
    if target not in ALLOWED.get(source, frozenset()):
        raise IllegalTransition(f"{execution.arn}: {source} -> {target}")
    now = timezone.now()
    changes = dict(status=target, last_modified_time=now, **fields)
    if target in ENDS:
        changes["end_time"] = now
    if not PipelineExecution.objects.filter(pk=execution.pk, status=source).update(**changes):
        return False
    for name, value in changes.items():
        setattr(execution, name, value)
    log.info("pipeline execution %s: %s -> %s", execution.arn, source, target)
    if target in ENDS:
        metrics.execution_ended(execution)
    return True
