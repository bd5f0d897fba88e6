"""Removes what a finished or vanished training job left behind (after a crash between its
terminal status and its clean-up): containers, networks, workspaces, and its containers'
credentials. Only this installation's resources: they carry its stack id.

The engine and the disk are listed BEFORE the database is asked which jobs are live: anything
listed belongs to a job that already existed, so a job created meanwhile is never reaped."""

import logging
import shutil
from pathlib import Path

from django.conf import settings

from accounts import container_credentials
from capacity.models import Placement
from capacity.nodes import local_name
from runtime import labels
from runtime.docker import get_runtime
from training import containers
from training.models import TERMINAL_STATUSES, TrainingJob

log = logging.getLogger(__name__)


def reap_training_orphans() -> None:
    runtime = get_runtime()
    selector = {labels.ROLE: labels.TRAINING_ROLE, labels.STACK: settings.SAGEPORT_STACK_ID}
    found_containers = runtime.find(selector)
    found_networks = runtime.find_networks(selector)
    workspaces = _workspace_dirs()
    credential_holders = container_credentials.holders("training-job")

    live = TrainingJob.objects.exclude(training_job_status__in=TERMINAL_STATUSES)
    live_arns = set(live.values_list("training_job_arn", flat=True))
    live_ids = set(live.values_list("pk", flat=True))
    for state in found_containers:
        if state.labels.get(labels.RESOURCE) not in live_arns:
            runtime.remove(state.name)
    live_networks = {containers.network_name_for(pk) for pk in live_ids}
    for network in found_networks:
        if network not in live_networks:
            runtime.remove_network(network)
    for job_id, directory in workspaces:
        if job_id not in live_ids:
            shutil.rmtree(directory, ignore_errors=True)
    # Keys of jobs that ended without their clean-up (a node lost, a crash before it).
    container_credentials.revoke_ended(credential_holders, live_arns)


def _workspace_dirs() -> list[tuple[int, Path]]:
    root = Path(settings.DATA_DIR) / "jobs"
    if not root.is_dir():
        return []
    entries = []
    for entry in root.iterdir():
        prefix = entry.name.split("-", 1)[0]
        if prefix.isdigit():
            entries.append((int(prefix), entry))
    return entries


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
