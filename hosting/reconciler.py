"""The endpoint reconciler.

Level-triggered, one short pass at a time: load the endpoint, observe its containers (by label),
health-check them, then let each deployment take its next step according to its phase:

- Provisioning: stage the model data and resolve the images once, start the containers, wait for
  every one to pass /ping. Then it becomes Active (CreateEndpoint) or starts Shifting (update).
  A container that exits or misses its startup deadline fails the deployment: the endpoint goes
  Failed (create) or back to InService on the old fleet with a FailureReason (update).
- Shifting: move traffic to the new fleet step by step (hosting/rollout.py), then retire
  the old fleet; past MaximumExecutionTimeoutInSeconds, roll back.
- Active: keep each variant at its desired count: replace containers that died or failed /ping,
  add or drain containers when UpdateEndpointWeightsAndCapacities changed the counts.
- Retiring: drain and stop every container, then forget the deployment.

Stopping a container that had traffic is a drain first (hosting/runtime_api/routing.py): out of the
routing table, wait until every API process has dropped it and its requests finished, then
SIGTERM, then SIGKILL after the grace period. A worker killed anywhere in here loses nothing:
rows say what was decided, labels find what was started, and every step is repeatable."""

import functools
import logging
import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from accounts import container_credentials
from gateway import network as gateway_network
from hosting import containers
from hosting import gpus as hosting_gpus
from hosting import model_data as hosting_model_data
from hosting import rollout as hosting_rollout
from hosting import transitions as t
from hosting.health import PingResult, ping_all
from hosting.models import (
    ContainerStatus,
    DeploymentPhase,
    Endpoint,
    EndpointDeployment,
    EndpointStatus,
    ServingContainer,
)
from hosting.runtime_api import routing
from logs import container_logs, store
from reconcile import leases
from reconcile.loop import reconcile_once
from runtime.base import ContainerStartFailed, ContainerState, NoSuchImage
from runtime.docker import get_runtime

log = logging.getLogger(__name__)

AT_ONCE = 0.0
# Container output is copied into CloudWatch at most this often per container (and at its end).
LOG_COPY_INTERVAL_SECONDS = 5.0
LIVE = (ContainerStatus.STARTING, ContainerStatus.IN_SERVICE)

States = dict[str, ContainerState]
_last_log_copy: dict[str, float] = {}


def reconcile(endpoint_id: int) -> float | None:
    return reconcile_once(Endpoint, endpoint_id, _step, give_up=_give_up, waiting=t.set_status_message)


def _step(endpoint: Endpoint, token: str) -> float | None:
    observed = {state.name: state for state in get_runtime().find(containers.endpoint_labels(endpoint))}
    if endpoint.endpoint_status == EndpointStatus.DELETING:
        for deployment in endpoint.deployments.exclude(phase=DeploymentPhase.RETIRING):
            t.move_deployment(deployment, DeploymentPhase.RETIRING)
    _remove_strays(endpoint, observed)
    for deployment in endpoint.deployments.exclude(phase=DeploymentPhase.RETIRING):
        _watch_health(endpoint, deployment, observed)
    for deployment in endpoint.deployments.all():
        PHASE_STEPS[deployment.phase](endpoint, deployment, token)
        if deployment.pk is None:
            continue  # retired with nothing left: _retire deleted it
        for container in deployment.containers.exclude(status__in=LIVE):
            _advance_stop(endpoint, container, observed.get(container.name))
    t.set_status_message(endpoint, "")  # this pass went through: nothing is awaited any more
    return _settle(endpoint, observed)


def _give_up(endpoint: Endpoint, reason: str) -> float | None:
    """A step failed for good: every deployment under way fails with the reason (a new endpoint
    goes Failed, an update is rolled back); the fleet that serves keeps serving."""
    for deployment in endpoint.deployments.filter(
        phase__in=(DeploymentPhase.PROVISIONING, DeploymentPhase.SHIFTING)
    ):
        _fail_deployment(endpoint, deployment, reason)
    return settings.SAGEPORT_POLL_INTERVAL_SECONDS  # the failed fleet is retired from now on


# --- Health ----------------------------------------------------------------------------------


def _watch_health(endpoint: Endpoint, deployment: EndpointDeployment, observed: States) -> None:
    rows = [row for row in deployment.containers.filter(status__in=LIVE) if row.started_at is not None]
    for row in rows:
        _copy_logs(endpoint, row)
    pingable = {
        row.name: row.host_port
        for row in rows
        if row.host_port and observed.get(row.name) is not None and observed[row.name].running
    }
    results = ping_all(pingable)
    for row in rows:
        state, result = observed.get(row.name), results.get(row.name)
        if row.status == ContainerStatus.STARTING:
            _judge_starting(endpoint, deployment, row, state, result)
        else:
            _judge_in_service(endpoint, row, state, result)


def _judge_starting(endpoint, deployment, row: ServingContainer, state, result: PingResult | None) -> None:
    if state is None or not state.running:
        return _give_up_on_start(
            endpoint, deployment, row, _ended(endpoint, row, state, "before passing /ping")
        )
    if result is not None and result.healthy:
        t.move_container(row, ContainerStatus.IN_SERVICE, healthy_at=timezone.now(), last_problem="")
        routing.bump()  # it takes traffic from now on
        return
    problem = result.problem if result else "no host port was published for port 8080"
    ServingContainer.objects.filter(pk=row.pk, status=row.status).update(last_problem=problem[:1024])
    timeout = containers.startup_timeout_seconds(deployment, row.variant_name)
    if timezone.now() - row.started_at > timedelta(seconds=timeout):
        _give_up_on_start(
            endpoint, deployment, row, f"did not pass the ping health check within {timeout:g} s: {problem}."
        )


def _judge_in_service(endpoint: Endpoint, row: ServingContainer, state, result: PingResult | None) -> None:
    if state is None or not state.running:
        return _start_drain(row, last_problem=_ended(endpoint, row, state, "while in service")[:1024])
    if result is None or result.healthy:
        if row.consecutive_failures:
            ServingContainer.objects.filter(pk=row.pk, status=row.status).update(consecutive_failures=0)
        return
    failures = row.consecutive_failures + 1
    if failures >= settings.SAGEPORT_HEALTH_FAILURE_THRESHOLD:
        _start_drain(row, last_problem=result.problem[:1024])  # replaced by the count check
    else:
        ServingContainer.objects.filter(pk=row.pk, status=row.status).update(
            consecutive_failures=failures, last_problem=result.problem[:1024]
        )


def _ended(endpoint: Endpoint, row: ServingContainer, state: ContainerState | None, when: str) -> str:
    if state is None:
        return f"disappeared from the container engine {when}."
    _copy_logs(endpoint, row, force=True)
    code = (
        "was killed for exceeding its memory" if state.oom_killed else f"exited with code {state.exit_code}"
    )
    tail = "\n".join(store.tail(_log_stream(endpoint, row), settings.SAGEPORT_LOG_TAIL_LINES))
    return f"{code} {when}." + (f" Last output:\n{tail}" if tail else "")


def _give_up_on_start(endpoint, deployment, row: ServingContainer, problem: str) -> None:
    """A container that never became healthy is stopped. A new fleet fails with it; an active
    fleet simply starts another container on its next count check."""
    _stop_now(row)
    if deployment.phase == DeploymentPhase.PROVISIONING:
        reason = f"The container {row.name} for production variant {row.variant_name} {problem}"
        _fail_deployment(endpoint, deployment, reason)


# --- Phases ----------------------------------------------------------------------------------


def _provision(endpoint: Endpoint, deployment: EndpointDeployment, token: str) -> None:
    if deployment.model_data_ready_at is None:
        try:
            with leases.kept_alive(Endpoint, endpoint.pk, token):
                _prepare(endpoint, deployment)
        except (hosting_model_data.ModelDataError, NoSuchImage) as error:
            return _fail_deployment(endpoint, deployment, f"ClientError: {error}")
    if _past_execution_deadline(endpoint, deployment):
        return
    _keep_counts(endpoint, deployment)
    deployment.refresh_from_db()
    if deployment.phase != DeploymentPhase.PROVISIONING or not _at_strength(deployment):
        return
    if endpoint.deployments.filter(phase=DeploymentPhase.ACTIVE).exists():
        # The first traffic step comes with the move: the new fleet never shows 0% shifted.
        t.move_deployment(deployment, DeploymentPhase.SHIFTING, **_traffic_step(deployment, 0))
        routing.bump()
        return
    t.move_deployment(deployment, DeploymentPhase.ACTIVE)  # the first fleet of a new endpoint
    t.move_endpoint(endpoint, EndpointStatus.IN_SERVICE)
    routing.bump()


def _prepare(endpoint: Endpoint, deployment: EndpointDeployment) -> None:
    """Stage every model the deployment uses and resolve its images, once per deployment (an
    image pull is told in the status message as it goes)."""
    resolved = {}
    say = functools.partial(t.set_status_message, endpoint)
    for name in deployment.desired:
        variant = containers.variant_spec(deployment, name)
        definition = containers.container_definition(deployment, name)
        hosting_model_data.stage(definition, containers.model_dir(deployment, variant["ModelName"]))
        image = definition["Image"]
        resolved[image] = {
            "ResolvedImage": f"{_repository(image)}@{containers.resolve_image(image, say)}",
            "ResolutionTime": time.time(),
        }
    now = timezone.now()
    EndpointDeployment.objects.filter(pk=deployment.pk).update(
        model_data_ready_at=now, resolved_images=resolved
    )
    deployment.model_data_ready_at, deployment.resolved_images = now, resolved


def _repository(image: str) -> str:
    """`registry:5000/repo:tag` -> `registry:5000/repo` (a tag has no `/` after its colon)."""
    name, _, tag = image.rpartition(":")
    return name if name and "/" not in tag else image


def _shift(endpoint: Endpoint, deployment: EndpointDeployment, token: str) -> None:
    if _past_execution_deadline(endpoint, deployment):
        return
    _keep_counts(endpoint, deployment)
    config, now = deployment.deployment_config, timezone.now()
    if deployment.traffic_step < len(_traffic_plan(deployment)):
        if now - deployment.last_shift_at >= hosting_rollout.wait_interval(config):
            _decide(deployment, **_traffic_step(deployment, deployment.traffic_step))
            routing.bump()
    elif now - deployment.last_shift_at >= hosting_rollout.termination_wait(config):
        _complete_update(endpoint, deployment)


def _traffic_plan(deployment: EndpointDeployment) -> list[float]:
    total = sum(values["DesiredInstanceCount"] for values in deployment.desired.values())
    return hosting_rollout.traffic_steps(deployment.deployment_config, total)


def _traffic_step(deployment: EndpointDeployment, index: int) -> dict:
    """The fields that record step `index` (0-based) of the traffic plan as done now."""
    return {
        "traffic_step": index + 1,
        "traffic_percent": _traffic_plan(deployment)[index],
        "last_shift_at": timezone.now(),
    }


def _complete_update(endpoint: Endpoint, deployment: EndpointDeployment) -> None:
    # The old fleet leaves first: two Active deployments would both take full traffic.
    for old in endpoint.deployments.filter(phase=DeploymentPhase.ACTIVE):
        t.move_deployment(old, DeploymentPhase.RETIRING)
    t.move_deployment(deployment, DeploymentPhase.ACTIVE)
    t.move_endpoint(
        endpoint,
        EndpointStatus.IN_SERVICE,
        endpoint_config_name=deployment.endpoint_config_name,
        failure_reason="",
    )
    routing.bump()


def _serve(endpoint: Endpoint, deployment: EndpointDeployment, token: str) -> None:
    _keep_counts(endpoint, deployment)
    if endpoint.endpoint_status != EndpointStatus.UPDATING:
        return
    if endpoint.deployments.exclude(pk=deployment.pk).exclude(phase=DeploymentPhase.RETIRING).exists():
        return  # a blue/green update is under way; it decides when the endpoint is InService
    if _at_strength(deployment) and not deployment.containers.exclude(status__in=LIVE).exists():
        t.move_endpoint(endpoint, EndpointStatus.IN_SERVICE)


def _retire(endpoint: Endpoint, deployment: EndpointDeployment, token: str) -> None:
    for row in deployment.containers.filter(status__in=LIVE):
        if row.status == ContainerStatus.STARTING:
            _stop_now(row)  # it never had traffic
        else:
            _start_drain(row)
    if not deployment.containers.exists():
        containers.remove_deployment_dir(deployment)
        deployment.delete()


PHASE_STEPS = {
    DeploymentPhase.PROVISIONING: _provision,
    DeploymentPhase.SHIFTING: _shift,
    DeploymentPhase.ACTIVE: _serve,
    DeploymentPhase.RETIRING: _retire,
}


def _fail_deployment(endpoint: Endpoint, deployment: EndpointDeployment, reason: str) -> None:
    reason = reason[:1024]
    if not t.move_deployment(deployment, DeploymentPhase.RETIRING, failure_reason=reason):
        return
    endpoint.refresh_from_db()
    if endpoint.endpoint_status == EndpointStatus.CREATING:
        t.move_endpoint(endpoint, EndpointStatus.FAILED, failure_reason=reason)
    elif endpoint.endpoint_status == EndpointStatus.UPDATING:
        config_name = deployment.endpoint_config_name
        rolled_back = f"The update to endpoint configuration {config_name} was rolled back: {reason}"
        t.move_endpoint(endpoint, EndpointStatus.IN_SERVICE, failure_reason=rolled_back[:1024])
    routing.bump()  # traffic the new fleet had goes back to the old one


def _past_execution_deadline(endpoint: Endpoint, deployment: EndpointDeployment) -> bool:
    deadline = hosting_rollout.execution_deadline(deployment.deployment_config, deployment.created_at)
    if deadline is None or timezone.now() < deadline:
        return False
    limit = deployment.deployment_config["BlueGreenUpdatePolicy"]["MaximumExecutionTimeoutInSeconds"]
    _fail_deployment(
        endpoint,
        deployment,
        f"The deployment did not complete within MaximumExecutionTimeoutInSeconds ({limit} s).",
    )
    return True


def _decide(deployment: EndpointDeployment, **fields) -> None:
    """Record a decision that is not a phase change, only if the deployment is still where we saw it."""
    EndpointDeployment.objects.filter(pk=deployment.pk, phase=deployment.phase).update(**fields)
    for name, value in fields.items():
        setattr(deployment, name, value)


# --- Container counts ------------------------------------------------------------------------


def _keep_counts(endpoint: Endpoint, deployment: EndpointDeployment) -> None:
    """Each variant gets exactly its desired number of live containers: start the missing ones
    (new, or replacing those that died or failed /ping), drain the extra ones."""
    rows = list(deployment.containers.all())
    for variant_name, desired in deployment.desired.items():
        mine = [row for row in rows if row.variant_name == variant_name]
        live = [row for row in mine if row.status in LIVE]
        missing = desired["DesiredInstanceCount"] - len(live)
        next_ordinal = max((row.ordinal for row in mine), default=0) + 1
        if missing > 0:
            _add_containers(endpoint, deployment, variant_name, range(next_ordinal, next_ordinal + missing))
        # Extra ones: those not yet serving first, then the newest.
        for row in sorted(
            live, key=lambda r: (r.status == ContainerStatus.STARTING, r.ordinal), reverse=True
        )[: max(0, -missing)]:
            _stop_now(row) if row.status == ContainerStatus.STARTING else _start_drain(row)
    if deployment.phase == DeploymentPhase.RETIRING:
        return  # failed for want of GPUs: nothing more to start
    for row in deployment.containers.filter(status=ContainerStatus.STARTING, started_at__isnull=True):
        _run(endpoint, deployment, row)


def _add_containers(
    endpoint: Endpoint, deployment: EndpointDeployment, variant_name: str, ordinals: range
) -> None:
    try:
        hosting_gpus.add_containers(deployment, variant_name, ordinals, endpoint.hosting_node)
    except hosting_gpus.GpusUnavailable as shortage:
        _gpus_unavailable(endpoint, deployment, variant_name, str(shortage))


def _gpus_unavailable(
    endpoint: Endpoint, deployment: EndpointDeployment, variant_name: str, reason: str
) -> None:
    """Containers that cannot have their GPUs. While GPUs are about to be freed (the endpoint's
    outgoing containers, ended training jobs), wait. Otherwise a new fleet fails (create: Failed;
    update: rolled back), a capacity change of UpdateEndpointWeightsAndCapacities is not applied,
    and a replacement waits for GPUs to be freed."""
    if hosting_gpus.gpus_coming_back(endpoint):
        return
    if deployment.phase == DeploymentPhase.PROVISIONING:
        return _fail_deployment(endpoint, deployment, reason)
    others = endpoint.deployments.exclude(pk=deployment.pk).exclude(phase=DeploymentPhase.RETIRING)
    if endpoint.endpoint_status != EndpointStatus.UPDATING or others.exists():
        log.warning("endpoint %s: a replacement container waits for GPUs: %s", endpoint.endpoint_name, reason)
        return
    # The variant keeps the containers it has.
    live = deployment.containers.filter(variant_name=variant_name, status__in=LIVE).count()
    desired = {name: dict(values) for name, values in deployment.desired.items()}
    desired[variant_name]["DesiredInstanceCount"] = live
    _decide(deployment, desired=desired)
    refused = f"The capacity change was not applied: {reason}"
    t.move_endpoint(endpoint, EndpointStatus.IN_SERVICE, failure_reason=refused[:1024])


def _run(endpoint: Endpoint, deployment: EndpointDeployment, row: ServingContainer) -> None:
    try:
        spec = containers.spec_for(endpoint, deployment, row)
        gateway_network.ensure(get_runtime(), spec.extra_networks)
        state = get_runtime().run(spec)
    except (ContainerStartFailed, NoSuchImage) as error:
        return _give_up_on_start(endpoint, deployment, row, f"could not be started: {error}")
    ServingContainer.objects.filter(pk=row.pk).update(started_at=timezone.now(), host_port=state.host_port)


def _at_strength(deployment: EndpointDeployment) -> bool:
    """Every variant has exactly its desired number of containers, all healthy."""
    rows = list(deployment.containers.filter(status__in=LIVE))
    return all(
        sum(1 for row in rows if row.variant_name == name and row.status == ContainerStatus.IN_SERVICE)
        == desired["DesiredInstanceCount"]
        and not any(row.variant_name == name and row.status == ContainerStatus.STARTING for row in rows)
        for name, desired in deployment.desired.items()
    )


# --- Draining and stopping -------------------------------------------------------------------


def _start_drain(row: ServingContainer, **fields) -> None:
    """Out of the routing table now; stopped once no API process can still send it anything."""
    if t.move_container(
        row, ContainerStatus.DRAINING, drain_started_at=timezone.now(), drain_version=None, **fields
    ):
        _record_drain_version(row)


def _record_drain_version(row: ServingContainer) -> None:
    # Bumped after the Draining status was committed: an ack of this version proves the reload.
    version = routing.bump()
    ServingContainer.objects.filter(pk=row.pk, status=ContainerStatus.DRAINING).update(drain_version=version)
    row.drain_version = version


def _stop_now(row: ServingContainer) -> None:
    get_runtime().signal(row.name, "SIGTERM")
    t.move_container(row, ContainerStatus.STOPPING, stop_signalled_at=timezone.now())


def _advance_stop(endpoint: Endpoint, row: ServingContainer, state: ContainerState | None) -> None:
    now = timezone.now()
    if row.status == ContainerStatus.DRAINING:
        if row.drain_version is None:  # a crash between the status and the bump
            return _record_drain_version(row)
        waited = (now - row.drain_started_at).total_seconds()
        drained = waited >= _minimum_drain_seconds() and routing.has_drained(row.name, row.drain_version)
        # Requests in flight end within the invocation timeout, whatever an ack still says.
        if (
            drained
            or waited
            > settings.SAGEPORT_INVOCATION_TIMEOUT_SECONDS + settings.SAGEPORT_ROUTING_ACK_TTL_SECONDS
        ):
            _stop_now(row)
        return
    if state is None or not state.running:
        _copy_logs(endpoint, row, force=True)
        get_runtime().remove(row.name)
        _last_log_copy.pop(row.name, None)
        row.delete()
    elif now - row.stop_signalled_at >= timedelta(seconds=settings.SAGEPORT_SERVE_KILL_GRACE_SECONDS):
        get_runtime().signal(row.name, "SIGKILL")


def _minimum_drain_seconds() -> float:
    # Covers an API process whose ack vanished for a moment (e.g. Redis restarted) and that
    # republishes at its next refresh.
    return 2 * settings.SAGEPORT_ROUTING_REFRESH_SECONDS


def _remove_strays(endpoint: Endpoint, observed: States) -> None:
    """Containers with this endpoint's labels but no row (a crash between a row's removal and
    the container's, or an engine restored from elsewhere)."""
    known = set(ServingContainer.objects.filter(deployment__endpoint=endpoint).values_list("name", flat=True))
    for name in list(observed):
        if name not in known:
            get_runtime().remove(name)
            del observed[name]


# --- Endpoint status and logs ----------------------------------------------------------------


def _settle(endpoint: Endpoint, observed: States) -> float | None:
    """Delete a deleted endpoint once nothing is left; otherwise when to look next: soon while
    anything moves, at the health-check interval when all is steady."""
    endpoint.refresh_from_db()
    deployments = list(endpoint.deployments.all())
    if endpoint.endpoint_status == EndpointStatus.DELETING and not deployments:
        containers.remove_endpoint_dir(endpoint.pk)
        container_credentials.revoke(endpoint.endpoint_arn)  # before the row: a crash leaves it to the reaper
        endpoint.delete()
        routing.bump()
        return None
    if endpoint.endpoint_status == EndpointStatus.FAILED and not deployments:
        return None
    steady = (
        endpoint.endpoint_status == EndpointStatus.IN_SERVICE
        and all(deployment.phase == DeploymentPhase.ACTIVE for deployment in deployments)
        and not ServingContainer.objects.filter(deployment__endpoint=endpoint)
        .exclude(status=ContainerStatus.IN_SERVICE)
        .exists()
    )
    return (
        settings.SAGEPORT_HEALTH_CHECK_INTERVAL_SECONDS if steady else settings.SAGEPORT_POLL_INTERVAL_SECONDS
    )


def _log_stream(endpoint: Endpoint, row: ServingContainer):
    group = f"/aws/sagemaker/Endpoints/{endpoint.endpoint_name}"
    return store.get_stream(endpoint.account_id, endpoint.region, group, f"{row.variant_name}/{row.name}")


def _copy_logs(endpoint: Endpoint, row: ServingContainer, force: bool = False) -> None:
    now = time.monotonic()
    if not force and now - _last_log_copy.get(row.name, 0.0) < LOG_COPY_INTERVAL_SECONDS:
        return
    _last_log_copy[row.name] = now
    container_logs.collect(get_runtime(), row.name, _log_stream(endpoint, row))
