"""Removes what serving containers left behind on this node: containers whose row is gone (a
crash between a row's deletion and its container's removal, a deleted deployment, or rows
forgotten while this node was lost) and model-data directories of deleted deployments. Only this
installation's resources on this node: they carry its stack id and this node's name (a container
from before nodes were labelled counts as this node's).
Also revokes the container credentials of endpoints that no longer exist.

The engine and the disk are listed BEFORE the database is read: a container's row is created
before the container, and a deployment before its directory, so nothing created meanwhile is
ever taken for an orphan."""

import logging
import shutil
from pathlib import Path

from django.conf import settings

from accounts import container_credentials
from capacity.nodes import local_name
from hosting import containers
from hosting.models import Endpoint, EndpointDeployment, ServingContainer
from runtime import labels
from runtime.docker import get_runtime

log = logging.getLogger(__name__)


def reap_serving_orphans() -> None:
    """Run by the sweeper on whichever node takes it, and by each node when it (re)registers."""
    runtime = get_runtime()
    here = local_name()
    selector = {labels.ROLE: labels.SERVING_ROLE, labels.STACK: settings.SAGEPORT_STACK_ID}
    found_containers = [
        state for state in runtime.find(selector) if state.labels.get(labels.NODE, here) == here
    ]
    deployment_dirs = [
        (int(directory.name), directory)
        for endpoint_dir in _numbered_dirs(containers.endpoints_root())
        for directory in _numbered_dirs(endpoint_dir)
    ]

    credential_holders = container_credentials.holders("endpoint")
    owned = set(ServingContainer.objects.filter(node__name=here).values_list("name", flat=True))
    live_deployments = {str(pk) for pk in EndpointDeployment.objects.values_list("pk", flat=True)}
    # Keys of endpoints deleted without their clean-up (a crash between revocation and the row).
    existing = set(Endpoint.objects.values_list("endpoint_arn", flat=True))
    container_credentials.revoke_ended(credential_holders, existing)
    for state in found_containers:
        if state.name not in owned:
            log.info("removing %s: no serving container of node %s has that name", state.name, here)
            runtime.remove(state.name)
    for deployment_id, directory in deployment_dirs:
        if str(deployment_id) not in live_deployments:
            shutil.rmtree(directory, ignore_errors=True)


def _numbered_dirs(root: Path) -> list[Path]:
    return [entry for entry in root.iterdir() if entry.name.isdigit()] if root.is_dir() else []
