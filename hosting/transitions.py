"""The single writers of hosting states: endpoint status, deployment phase, container status.

Each is a compare-and-set on the state the caller last saw (`filter(pk=…, status=old).update(…)`),
checked against a table of allowed moves, so the API and the worker never overwrite each other.
A False return means someone moved the row first: reload and decide again."""

from django.db.models import Model
from django.utils import timezone

from hosting.models import (
    ContainerStatus,
    DeploymentPhase,
    Endpoint,
    EndpointDeployment,
    EndpointStatus,
    ServingContainer,
)

ENDPOINT_MOVES = {
    EndpointStatus.CREATING: frozenset({EndpointStatus.IN_SERVICE, EndpointStatus.FAILED}),
    EndpointStatus.IN_SERVICE: frozenset({EndpointStatus.UPDATING, EndpointStatus.DELETING}),
    # An update ends InService whether it was applied or rolled back (then with a FailureReason).
    EndpointStatus.UPDATING: frozenset({EndpointStatus.IN_SERVICE}),
    EndpointStatus.FAILED: frozenset({EndpointStatus.DELETING}),
}

PHASE_MOVES = {
    DeploymentPhase.PROVISIONING: frozenset(
        {DeploymentPhase.SHIFTING, DeploymentPhase.ACTIVE, DeploymentPhase.RETIRING}
    ),
    DeploymentPhase.SHIFTING: frozenset({DeploymentPhase.ACTIVE, DeploymentPhase.RETIRING}),
    DeploymentPhase.ACTIVE: frozenset({DeploymentPhase.RETIRING}),
}

CONTAINER_MOVES = {
    # A container that never passed /ping never received traffic: it needs no drain.
    ContainerStatus.STARTING: frozenset({ContainerStatus.IN_SERVICE, ContainerStatus.STOPPING}),
    ContainerStatus.IN_SERVICE: frozenset({ContainerStatus.DRAINING}),
    ContainerStatus.DRAINING: frozenset({ContainerStatus.STOPPING}),
}


class IllegalTransition(Exception):
    pass


def move_endpoint(endpoint: Endpoint, target: str, **fields) -> bool:
    fields.setdefault("last_modified_time", timezone.now())
    return _compare_and_set(endpoint, "endpoint_status", target, ENDPOINT_MOVES, **fields)


def move_deployment(deployment: EndpointDeployment, target: str, **fields) -> bool:
    fields.setdefault("phase_changed_at", timezone.now())
    return _compare_and_set(deployment, "phase", target, PHASE_MOVES, **fields)


def move_container(container: ServingContainer, target: str, **fields) -> bool:
    return _compare_and_set(container, "status", target, CONTAINER_MOVES, **fields)


def _compare_and_set(row: Model, field: str, target: str, table: dict, **fields) -> bool:
    source = getattr(row, field)
    if target not in table.get(source, frozenset()):
        raise IllegalTransition(f"{type(row).__name__} {row.pk}: {source} -> {target}")
    updated = type(row).objects.filter(pk=row.pk, **{field: source}).update(**{field: target}, **fields)
    if not updated:
        return False
    setattr(row, field, target)
    for name, value in fields.items():
        setattr(row, name, value)
    return True


UNDER_WAY = (DeploymentPhase.PROVISIONING, DeploymentPhase.SHIFTING)


def set_status_message(endpoint: Endpoint, message: str) -> None:
    """Say what the deployments under way wait for (a transient fault, an image pull); the
    fleet in service has no status to carry it. Not a state: no compare-and-set."""
    EndpointDeployment.objects.filter(endpoint=endpoint, phase__in=UNDER_WAY).exclude(
        status_message=message[:1024]
    ).update(status_message=message[:1024])
