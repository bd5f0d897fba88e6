"""The queue of an asynchronous endpoint: AsyncInvocation rows (hosting/models.py).

A request is a row from the moment InvokeEndpointAsync answers 202 (`accept`, committed before
the answer). Workers take rows by `claim`, which gives each one a container with a free slot
(MaxConcurrentInvocationsPerInstance per InService container) and a lease of the invocation
timeout plus `LEASE_SLACK`: a worker that dies mid-request leaves its rows to be claimed again
once the lease ends, so every request is processed at least once. `plan` is the decision, pure.
A request still waiting when its RequestTTLSeconds end is claimed to be failed, whatever the
capacity. Finished rows are kept `KEEP_FINISHED` (a client retrying an InferenceId gets the same
answer and no second run), then pruned by the sweeper."""

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from hosting import async_config
from hosting.models import (
    ROUTED_PHASES,
    AsyncInvocation,
    AsyncInvocationStatus,
    ContainerStatus,
    Endpoint,
    ServingContainer,
)

DEFAULT_TTL_SECONDS = 6 * 3600  # SageMaker's default RequestTTLSeconds
DEFAULT_INVOCATION_TIMEOUT_SECONDS = 15 * 60  # SageMaker's default InvocationTimeoutSeconds
LEASE_SLACK = timedelta(seconds=10)  # reading the input and writing the output, around the exchange
KEEP_FINISHED = timedelta(days=1)
OPEN_STATUSES = (AsyncInvocationStatus.PENDING, AsyncInvocationStatus.IN_PROGRESS)


@dataclass(frozen=True)
class Waiting:
    """What `plan` needs of a claimable row."""

    pk: int
    expires_at: datetime
    attempts: int


@dataclass(frozen=True)
class Plan:
    runs: list[tuple[int, str]]  # (row, container) in queue order
    expired: list[int]  # rows whose TTL ended before they ever started


def plan(waiting: list[Waiting], free_slots: dict[str, int], now: datetime) -> Plan:
    """Which waiting rows (oldest first) start now and where. A row never started whose TTL has
    ended fails instead of taking a slot; one started before (its worker died) is run again
    whatever its TTL, since the TTL bounds the wait in the queue only. Slots are filled on the
    container with the most of them free, so that load spreads across instances."""
    free = {name: slots for name, slots in free_slots.items() if slots > 0}
    runs, expired = [], []
    for row in waiting:
        if row.attempts == 0 and row.expires_at <= now:
            expired.append(row.pk)
        elif free:
            container = max(sorted(free), key=lambda name: free[name])
            runs.append((row.pk, container))
            free[container] -= 1
            if not free[container]:
                del free[container]
    return Plan(runs, expired)


def free_slots(per_instance: int, containers: list[str], busy: Counter) -> dict[str, int]:
    return {name: per_instance - busy[name] for name in containers}


# --- Accepting -------------------------------------------------------------------------------


def accept(endpoint: Endpoint, config: dict, request: dict, now: datetime | None = None) -> AsyncInvocation:
    """The request's row, committed (InvokeEndpointAsync answers only after this). The same
    InferenceId again (a client's retry) returns the row it made first, unchanged."""
    now = now or timezone.now()
    inference_id = request["InferenceId"]
    ttl = request.get("RequestTTLSeconds", DEFAULT_TTL_SECONDS)
    try:
        with transaction.atomic():
            return AsyncInvocation.objects.create(
                endpoint=endpoint,
                inference_id=inference_id,
                input_location=request["InputLocation"],
                output_location=async_config.output_location(config, inference_id),
                failure_location=async_config.failure_location(config, inference_id),
                headers=request["Headers"],
                invocation_timeout_seconds=request.get(
                    "InvocationTimeoutSeconds", DEFAULT_INVOCATION_TIMEOUT_SECONDS
                ),
                created_at=now,
                expires_at=now + timedelta(seconds=ttl),
            )
    except IntegrityError:
        return AsyncInvocation.objects.get(endpoint=endpoint, inference_id=inference_id)


# --- Claiming --------------------------------------------------------------------------------


def claimable(now: datetime) -> Q:
    return Q(status=AsyncInvocationStatus.PENDING) | Q(
        status=AsyncInvocationStatus.IN_PROGRESS, lease_expires_at__lt=now
    )


def claim(endpoint_id: int, now: datetime | None = None) -> Plan:
    """Lease what `plan` decides, under the endpoint row's lock (two workers claiming at once
    would otherwise both fill the same free slots)."""
    now = now or timezone.now()
    with transaction.atomic():
        endpoint = Endpoint.objects.select_for_update().filter(pk=endpoint_id).first()
        if endpoint is None:
            return Plan([], [])
        rows = endpoint.async_invocations.filter(claimable(now)).order_by("created_at", "pk")
        waiting = [Waiting(row.pk, row.expires_at, row.attempts) for row in rows]
        decided = plan(waiting, _free_slots(endpoint, now), now)
        for pk, container in decided.runs:
            _lease(pk, container, now)
        for pk in decided.expired:
            _lease(pk, "", now)
    return decided


def _lease(pk: int, container: str, now: datetime) -> None:
    row = AsyncInvocation.objects.get(pk=pk)
    row.status = AsyncInvocationStatus.IN_PROGRESS
    row.container_name = container
    row.attempts += 1 if container else 0
    row.lease_expires_at = now + timedelta(seconds=row.invocation_timeout_seconds) + LEASE_SLACK
    row.save(update_fields=["status", "container_name", "attempts", "lease_expires_at"])


def _free_slots(endpoint: Endpoint, now: datetime) -> dict[str, int]:
    containers = list(routable_containers(endpoint).values_list("name", flat=True))
    busy = Counter(
        endpoint.async_invocations.filter(
            status=AsyncInvocationStatus.IN_PROGRESS, lease_expires_at__gte=now
        ).values_list("container_name", flat=True)
    )
    per_instance = async_config.max_concurrent_per_instance(endpoint_async_config(endpoint) or {})
    return free_slots(per_instance, containers, busy)


def routable_containers(endpoint: Endpoint):
    """The endpoint's InService containers in a deployment that takes traffic (the router's rule)."""
    return ServingContainer.objects.filter(
        deployment__endpoint=endpoint, deployment__phase__in=ROUTED_PHASES, status=ContainerStatus.IN_SERVICE
    ).select_related("node")


def endpoint_async_config(endpoint: Endpoint) -> dict | None:
    """The AsyncInferenceConfig the endpoint's newest routed deployment runs (None: real-time)."""
    deployment = endpoint.deployments.filter(phase__in=ROUTED_PHASES).order_by("-pk").first()
    return deployment.snapshot["EndpointConfig"].get("AsyncInferenceConfig") if deployment else None


# --- Finishing -------------------------------------------------------------------------------


def finish(pk: int, status: str, reason: str = "") -> None:
    AsyncInvocation.objects.filter(pk=pk, status=AsyncInvocationStatus.IN_PROGRESS).update(
        status=status, failure_reason=reason[:1024], finished_at=timezone.now(), lease_expires_at=None
    )


def release(pk: int) -> None:
    """Back to the queue, to be claimed again (on whichever container then has a slot)."""
    AsyncInvocation.objects.filter(pk=pk, status=AsyncInvocationStatus.IN_PROGRESS).update(
        status=AsyncInvocationStatus.PENDING, container_name="", lease_expires_at=None
    )


def backlog_size(endpoint: Endpoint) -> int:
    """Requests accepted and not finished (waiting or running)."""
    return endpoint.async_invocations.filter(status__in=OPEN_STATUSES).count()


def endpoints_with_work(now: datetime | None = None) -> list[int]:
    now = now or timezone.now()
    return sorted(set(AsyncInvocation.objects.filter(claimable(now)).values_list("endpoint_id", flat=True)))


def prune(now: datetime | None = None) -> int:
    now = now or timezone.now()
    finished = AsyncInvocation.objects.exclude(status__in=OPEN_STATUSES)
    return finished.filter(finished_at__lt=now - KEEP_FINISHED).delete()[0]
