"""Removes what a deleted endpoint deployment left behind: serving containers and model-data
directories (after a crash between its row's deletion and its clean-up), and the container
credentials of endpoints that no longer exist. Only this installation's
resources: they carry its stack id.

The engine and the disk are listed BEFORE the database is asked which deployments are live:
anything listed belongs to a deployment that already existed, so one created meanwhile is never
reaped."""

import shutil
from pathlib import Path

from django.conf import settings

from accounts import container_credentials
from hosting import containers
from hosting.models import Endpoint, EndpointDeployment
from runtime import labels
from runtime.docker import get_runtime


def reap_serving_orphans() -> None:
    """Serving containers and model-data directories of deployments that no longer exist (the
    endpoint reconciler removes its own; this catches a crash between a row and its cleanup)."""
    runtime = get_runtime()
    selector = {labels.ROLE: labels.SERVING_ROLE, labels.STACK: settings.SAGEPORT_STACK_ID}
    found_containers = runtime.find(selector)
    deployment_dirs = [
        (int(directory.name), directory)
        for endpoint_dir in _numbered_dirs(containers.endpoints_root())
        for directory in _numbered_dirs(endpoint_dir)
    ]

    credential_holders = container_credentials.holders("endpoint")

    live_deployments = {str(pk) for pk in EndpointDeployment.objects.values_list("pk", flat=True)}
    # Keys of endpoints deleted without their clean-up (a crash between revocation and the row).
    existing = set(Endpoint.objects.values_list("endpoint_arn", flat=True))
    container_credentials.revoke_ended(credential_holders, existing)
    for state in found_containers:
        if state.labels.get(labels.DEPLOYMENT) not in live_deployments:
            runtime.remove(state.name)
    for deployment_id, directory in deployment_dirs:
        if str(deployment_id) not in live_deployments:
            shutil.rmtree(directory, ignore_errors=True)


def _numbered_dirs(root: Path) -> list[Path]:
    return [entry for entry in root.iterdir() if entry.name.isdigit()] if root.is_dir() else []
