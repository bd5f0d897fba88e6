"""Removes what a finished or vanished training job left behind (after a crash between its
terminal status and its clean-up): containers, networks, workspaces, and its containers'
credentials (jobs/cleanup.py; listed before the live jobs are read), and this node's containers
whose instance was placed elsewhere since."""

import logging

from django.conf import settings

from capacity.models import Placement
from capacity.nodes import local_name
from jobs import cleanup
from runtime import labels
from runtime.docker import get_runtime
from training.kind import TRAINING
from training.models import TERMINAL_STATUSES, TrainingJob

log = logging.getLogger(__name__)


def reap_training_orphans() -> None:
    runtime = get_runtime()
    found = cleanup.listed_leftovers(runtime, TRAINING)
    live = TrainingJob.objects.exclude(training_job_status__in=TERMINAL_STATUSES)
    live_arns = set(live.values_list("training_job_arn", flat=True))
    live_ids = set(live.values_list("pk", flat=True))
    cleanup.reap(runtime, found, live_arns, live_ids)


def remove_disowned_containers() -> None:
    """Remove this node's training containers whose instance is no longer placed here (its jobs
    were restarted elsewhere or failed while the node was lost). The engine is listed before the
    placements are read, and a placement always exists before its container: a container created
    meanwhile is never taken for an orphan."""
    runtime = get_runtime()
    mine = {labels.ROLE: labels.TRAINING_ROLE, labels.NODE: local_name()}
    found = runtime.find({**mine, labels.STACK: settings.SAGEPORT_STACK_ID})
    owned = set(
        Placement.objects.filter(node__name=local_name()).values_list("job__training_job_arn", "host")
    )
    for state in found:
        if (state.labels.get(labels.RESOURCE), state.labels.get(labels.HOST)) not in owned:
            log.info("removing %s: its instance is no longer placed on node %s", state.name, local_name())
            runtime.remove(state.name)
