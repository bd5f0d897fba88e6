"""How many containers a serverless variant runs: raised by the requests, lowered when idle.

The count is the deployment's `desired[<variant>]["DesiredInstanceCount"]`, which the reconciler
keeps (hosting/reconciler.py `_keep_counts`: it starts the missing containers and drains the
extra ones). Two writers change it, each in a transaction holding the deployment row:

- `scale_up`, from a serving process, when a request holds more slots than the count
  (hosting/serverless_slots.py): the count rises to the slots in flight, never past
  MaxConcurrency, and the endpoint's next look is made due now (the caller sends the nudge);
- `scale_down`, from the reconciler's pass over an active deployment: the count falls to what the
  idle window still needs (the most slots in flight within the last
  `SAGEPORT_SERVERLESS_IDLE_SECONDS`, or those in flight now), never below ProvisionedConcurrency.

So no writer ever asks for more than MaxConcurrency containers, whichever processes race; a lost
race only delays a change to the next request or pass. Lowering the count drains containers: out
of the routing table first, stopped only once no serving process has a request in flight there
(hosting/runtime_api/routing.py), so an idle stop never cuts a request.

It also publishes what SageMaker publishes for serverless endpoints beyond the invocation metrics
(`AWS/SageMaker`, EndpointName and VariantName): ModelSetupTime (microseconds from a container's
start to its first successful /ping) and ServerlessConcurrentExecutionsUtilization (slots in
flight over MaxConcurrency, one sample per pass)."""

import logging

import redis
from django.db import transaction
from django.utils import timezone

from hosting import serverless, serverless_slots
from hosting.models import ROUTED_PHASES, ContainerStatus, Endpoint, EndpointDeployment, ServingContainer
from logs.metrics import MinuteKey, StatisticSet, add_statistic_sets

log = logging.getLogger(__name__)

NAMESPACE = "AWS/SageMaker"
# While a serverless container starts, a request waits on it: its /ping is tried this often rather
# than every SAGEPORT_POLL_INTERVAL_SECONDS (a look is a few queries and one ping; a cold start
# is measured against `docker run`, bench/serverless.py).
COLD_START_LOOK_SECONDS = 0.1


# --- Decisions (pure) ----------------------------------------------------------------------------


def raised_count(current: int, in_flight: int, config: dict) -> int:
    """The count a request holding one of `in_flight` slots needs: at least one container per
    request in flight, at most MaxConcurrency; never lower than it is."""
    return max(current, min(in_flight, config["MaxConcurrency"]))


def lowered_count(current: int, usage: serverless_slots.Usage, config: dict) -> int:
    """The count once idle containers go: what the idle window still needs, at least the
    provisioned containers; never higher than it is."""
    return min(current, max(serverless.provisioned(config), usage.needed))


# --- Writers -----------------------------------------------------------------------------------


def scale_up(deployment_pk: int, variant_name: str, in_flight: int) -> int | None:
    """Raise the variant's count for `in_flight` requests and make the endpoint's next look due
    now; returns the endpoint's id for the caller's nudge. None when it already has that many
    (or the deployment no longer routes)."""
    with transaction.atomic():
        deployment = (
            EndpointDeployment.objects.select_for_update()
            .filter(pk=deployment_pk, phase__in=ROUTED_PHASES)
            .first()
        )
        if deployment is None or not _changed(deployment, variant_name, raised_count, in_flight):
            return None
        Endpoint.objects.filter(pk=deployment.endpoint_id).update(next_check_at=timezone.now())
    return deployment.endpoint_id


def scale_down(deployment: EndpointDeployment) -> None:
    """Lower each serverless variant's count to what its idle window needs (the reconciler then
    drains the extra containers), and sample its concurrency. Without Redis the window is
    unknown: nothing is stopped."""
    for variant_name, values in deployment.desired.items():
        config = serverless.effective(values)
        if config is None:
            continue
        try:
            usage = serverless_slots.usage(deployment.pk, variant_name)
        except redis.RedisError as error:
            log.warning("serverless variant %s: usage unknown, nothing stopped: %s", variant_name, error)
            continue
        with transaction.atomic():
            locked = EndpointDeployment.objects.select_for_update().get(pk=deployment.pk)
            if _changed(locked, variant_name, lowered_count, usage):
                deployment.desired = locked.desired
        _publish(
            deployment,
            variant_name,
            "ServerlessConcurrentExecutionsUtilization",
            "None",
            usage.in_flight / config["MaxConcurrency"],
        )


def _changed(deployment: EndpointDeployment, variant_name: str, decide, observed) -> bool:
    values = deployment.desired[variant_name]
    config = serverless.effective(values)
    count = decide(values["DesiredInstanceCount"], observed, config)
    if count == values["DesiredInstanceCount"]:
        return False
    desired = {**deployment.desired, variant_name: {**values, "DesiredInstanceCount": count}}
    EndpointDeployment.objects.filter(pk=deployment.pk).update(desired=desired)
    deployment.desired = desired
    return True


def sooner_while_cold_starting(endpoint: Endpoint, delay: float | None) -> float | None:
    """The reconciler's next look: soon while a serverless variant's container is starting."""
    if delay is None or delay <= COLD_START_LOOK_SECONDS:
        return delay
    starting = ServingContainer.objects.filter(
        deployment__endpoint=endpoint, deployment__phase__in=ROUTED_PHASES, status=ContainerStatus.STARTING
    ).select_related("deployment")
    if any(serverless.effective(row.deployment.desired.get(row.variant_name, {})) for row in starting):
        return COLD_START_LOOK_SECONDS
    return delay


# --- Metrics -----------------------------------------------------------------------------------


def container_ready(deployment: EndpointDeployment, row: ServingContainer) -> None:
    """ModelSetupTime of a serverless variant's container that just passed /ping."""
    if serverless.effective(deployment.desired.get(row.variant_name, {})) is None or row.started_at is None:
        return
    seconds = (timezone.now() - row.started_at).total_seconds()
    _publish(deployment, row.variant_name, "ModelSetupTime", "Microseconds", seconds * 1_000_000)


def _publish(deployment: EndpointDeployment, variant_name: str, name: str, unit: str, value: float) -> None:
    endpoint = deployment.endpoint
    now = timezone.now()
    dimensions = (("EndpointName", endpoint.endpoint_name), ("VariantName", variant_name))
    key = MinuteKey(
        endpoint.account_id,
        endpoint.region,
        NAMESPACE,
        name,
        dimensions,
        unit,
        int(now.timestamp() // 60 * 60_000),
    )
    add_statistic_sets({key: StatisticSet(count=1, total=value, minimum=value, maximum=value)})
