"""Removes what a finished or vanished training job left behind (after a crash between its
terminal status and its clean-up). Only this installation's resources: they carry its stack id.

The engine and the disk are listed BEFORE the database is asked which jobs are live: anything
listed belongs to a job that already existed, so a job created meanwhile is never reaped."""

import shutil
from pathlib import Path

from django.conf import settings

from jobs.models import TERMINAL_STATUSES, TrainingJob
from workers import training_containers as containers
from workers.runtime.docker import STACK_LABEL, get_runtime


def reap_training_orphans() -> None:
    runtime = get_runtime()
    selector = {"sageport.role": containers.ROLE, STACK_LABEL: settings.SAGEPORT_STACK_ID}
    found_containers = runtime.find(selector)
    found_networks = runtime.find_networks(selector)
    workspaces = _workspace_dirs()

    live = TrainingJob.objects.exclude(training_job_status__in=TERMINAL_STATUSES)
    live_arns = set(live.values_list("training_job_arn", flat=True))
    live_ids = set(live.values_list("pk", flat=True))
    for state in found_containers:
        if state.labels.get("sageport.resource") not in live_arns:
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
