"""Removes what a finished or vanished training job left behind (after a crash between its
terminal status and its clean-up). Only this installation's resources: they carry its stack id.

The engine and the disk are listed BEFORE the database is asked which jobs are live: anything
listed belongs to a job that already existed, so a job created meanwhile is never reaped."""

import shutil
from pathlib import Path

from django.conf import settings

from endpoints.models import EndpointDeployment
from jobs.models import TERMINAL_STATUSES, TrainingJob
from workers import hosting_containers
from workers import training_containers as containers
from workers.runtime import labels
from workers.runtime.docker import get_runtime


def reap_training_orphans() -> None:
    runtime = get_runtime()
    selector = {labels.ROLE: labels.TRAINING_ROLE, labels.STACK: settings.SAGEPORT_STACK_ID}
    found_containers = runtime.find(selector)
    found_networks = runtime.find_networks(selector)
    workspaces = _workspace_dirs()

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


def reap_serving_orphans() -> None:
    """Serving containers and model-data directories of deployments that no longer exist (the
    endpoint reconciler removes its own; this catches a crash between a row and its cleanup)."""
    runtime = get_runtime()
    selector = {labels.ROLE: labels.SERVING_ROLE, labels.STACK: settings.SAGEPORT_STACK_ID}
    found_containers = runtime.find(selector)
    deployment_dirs = [
        (int(directory.name), directory)
        for endpoint_dir in _numbered_dirs(hosting_containers.endpoints_root())
        for directory in _numbered_dirs(endpoint_dir)
    ]

    live_deployments = {str(pk) for pk in EndpointDeployment.objects.values_list("pk", flat=True)}
    for state in found_containers:
        if state.labels.get(labels.DEPLOYMENT) not in live_deployments:
            runtime.remove(state.name)
    for deployment_id, directory in deployment_dirs:
        if str(deployment_id) not in live_deployments:
            shutil.rmtree(directory, ignore_errors=True)


def _numbered_dirs(root: Path) -> list[Path]:
    return [entry for entry in root.iterdir() if entry.name.isdigit()] if root.is_dir() else []
