"""The endpoint reconciler.

Level-triggered, one short pass at a time: load the endpoint, observe its containers (by label),
health-check them, then let each deployment take its next step according to its phase:

- Provisioning: stage the model data and resolve the images once, start the containers, wait for
  every one to pass /ping. Then it becomes Active (CreateEndpoint) or starts Shifting (update).
  A container that exits or misses its startup deadline fails the deployment: the endpoint goes
  Failed (create) or back to InService on the old fleet with a FailureReason (update). A start
  the engine fails through its own fault is tried again, at most one a pass, until
  ENGINE_FAULT_STARTS of them in a row fail the deployment.
- Shifting: move traffic to the new fleet step by step (hosting/rollout.py), then retire
  the old fleet; past MaximumExecutionTimeoutInSeconds, roll back.
- Active: keep each variant at its desired count: replace containers that died or failed /ping,
  add or drain containers when UpdateEndpointWeightsAndCapacities changed the counts.
- Retiring: drain and stop every container, then forget the deployment.

Serving containers are placed on nodes (hosting/placement.py), and the step runs on one node at a
time (hosting/tasks.py takes the endpoint's chain round the live nodes that hold its containers):
the engine, the model-data directory and /ping are those of the node the step runs on, so a step
starts, watches and stops only that node's containers, while every decision (counts, phases,
traffic) reads all rows. A container another node must stop is marked Stopping there and
signalled by its own node. Containers on a lost node (capacity/nodes.py) are forgotten: their
rows go and replacements are placed on live nodes, as for a container that died.

Stopping a container that had traffic is a drain first (hosting/runtime_api/routing.py): out of the
routing table, wait until every API process has dropped it and its requests finished, then
SIGTERM, then SIGKILL after the grace period. A worker killed anywhere in here loses nothing:
rows say what was decided, labels find what was started, and every step is repeatable."""

import functools
import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts import container_credentials
from capacity import nodes
from gateway import network as gateway_network
from hosting import component_placement, components, containers, history, placement, serverless_scaling
from hosting import model_data as hosting_model_data
from hosting import rollout as hosting_rollout
from hosting import transitions as t
from hosting.health import PingResult, ping_all
from hosting.models import (
    ContainerStatus,
    DeploymentEventKind,
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
from runtime import labels
from runtime.base import ContainerStartFailed, ContainerState, EngineFault, NoSuchImage
from runtime.docker import get_runtime

log = logging.getLogger(__name__)

AT_ONCE = 0.0
# Container output is copied into CloudWatch at most this often per container (and at its end).
LOG_COPY_INTERVAL_SECONDS = 5.0
LIVE = (ContainerStatus.STARTING, ContainerStatus.IN_SERVICE)
# A new fleet fails at this many container starts in a row that the engine failed through its
# own fault (a start that works resets the count).
ENGINE_FAULT_STARTS = 3

States = dict[str, ContainerState]
_last_log_copy: dict[str, float] = {}


def reconcile(endpoint_id: int) -> float | None:
    return reconcile_once(Endpoint, endpoint_id, _step, give_up=_give_up, waiting=t.set_status_message)


def _step(endpoint: Endpoint, token: str) -> float | None:
    selector = {**containers.endpoint_labels(endpoint), labels.NODE: nodes.local_name()}
    observed = {state.name: state for state in get_runtime().find(selector)}
    if endpoint.endpoint_status == EndpointStatus.DELETING:
        for deployment in endpoint.deployments.exclude(phase=DeploymentPhase.RETIRING):
            t.move_deployment(deployment, DeploymentPhase.RETIRING)
    _forget_lost_nodes(endpoint)
    _remove_strays(endpoint, observed)
    for deployment in endpoint.deployments.exclude(phase=DeploymentPhase.RETIRING):
        _watch_health(endpoint, deployment, observed)
    for deployment in endpoint.deployments.all():
        PHASE_STEPS[deployment.phase](endpoint, deployment, token)
        if deployment.pk is None:
            continue  # retired with nothing left: _retire deleted it
        for container in _here(deployment.containers.exclude(status__in=LIVE)):
            _advance_stop(endpoint, container, observed.get(container.name))
    t.set_status_message(endpoint, "")  # this pass went through: nothing is awaited any more
    delay = serverless_scaling.sooner_while_cold_starting(endpoint, _settle(endpoint))
    # The chain visits each node in turn: each still gets a look every `delay` seconds.
    return None if delay is None else delay / max(1, len(placement.rotation(endpoint.pk)))


def _here(rows):
    """The rows of containers placed on the node this step runs on."""
    return rows.filter(node__name=nodes.local_name())


def _forget_lost_nodes(endpoint: Endpoint) -> None:
    """Containers on a node declared lost no longer serve: their rows go (with their GPUs) and the
    count check places replacements on live nodes; a fleet still provisioning fails, as when a
    container dies before passing /ping. If the node comes back, its worker removes the
    containers themselves (hosting/reaper.py)."""
    lost = ServingContainer.objects.filter(deployment__endpoint=endpoint, node__lost_at__isnull=False)
    rows = list(lost.select_related("deployment", "node"))
    for row in rows:
        problem = f"was lost with its node {row.node.name}, which stopped sending heartbeats."
        log.warning("endpoint %s: container %s %s", endpoint.endpoint_name, row.name, problem)
        if row.deployment.phase == DeploymentPhase.PROVISIONING:
            reason = f"The container {row.name} for production variant {row.variant_name} {problem}"
            _fail_deployment(endpoint, row.deployment, reason)
        row.delete()
    if rows:
        routing.bump()


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
    rows = [row for row in _here(deployment.containers.filter(status__in=LIVE)) if row.started_at is not None]
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
        serverless_scaling.container_ready(deployment, row)
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


def _engine_fault(endpoint, deployment, row: ServingContainer, fault: EngineFault) -> None:
    """The engine failed to start a container through a fault of its own (a 5xx: an address it
    could not allocate, an attach that timed out), which says nothing of the model: the container
    is stopped and the next pass starts another, as SageMaker retries its own faults. A new fleet
    fails at the ENGINE_FAULT_STARTS-th in a row; a serving fleet keeps trying, as for any
    container it lost, its first faults in a row in the history and every one in the log."""
    EndpointDeployment.objects.filter(pk=deployment.pk).update(engine_faults=F("engine_faults") + 1)
    deployment.refresh_from_db(fields=["engine_faults"])
    faults = deployment.engine_faults
    log.warning("endpoint %s: the engine failed to start %s (%d in a row): %s",
                endpoint.endpoint_name, row.name, faults, fault)
    if deployment.phase == DeploymentPhase.PROVISIONING and faults >= ENGINE_FAULT_STARTS:
        problem = f"could not be started ({faults} faults of the engine in a row): {fault}"
        return _give_up_on_start(endpoint, deployment, row, problem)
    message = (
        f"The engine failed to start the container for production variant {row.variant_name} "
        f"through a fault of its own ({fault}); starting another ({faults} in a row)."
    )
    with transaction.atomic():
        if _stop_now(row) and faults <= ENGINE_FAULT_STARTS:
            _record(endpoint, deployment, DeploymentEventKind.ENGINE_FAULT, message)


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
    _keep_counts(endpoint, deployment, token)
    deployment.refresh_from_db()
    if deployment.phase != DeploymentPhase.PROVISIONING or not _at_strength(deployment):
        return
    size = sum(values["DesiredInstanceCount"] for values in deployment.desired.values())
    passed = f"Health gate passed: all {size} container{'s' if size > 1 else ''} answered /ping"
    if endpoint.deployments.filter(phase=DeploymentPhase.ACTIVE).exists():
        # The first traffic step comes with the move: the new fleet never shows 0% shifted.
        with transaction.atomic():
            if t.move_deployment(deployment, DeploymentPhase.SHIFTING, **_traffic_step(deployment, 0)):
                _record(endpoint, deployment, DeploymentEventKind.HEALTH_GATE_PASSED, f"{passed}.")
                _record_shift(endpoint, deployment)
        routing.bump()
        return
    with transaction.atomic():
        if t.move_deployment(deployment, DeploymentPhase.ACTIVE):  # the first fleet of a new endpoint
            kind = DeploymentEventKind.HEALTH_GATE_PASSED
            _record(endpoint, deployment, kind, f"{passed}; the endpoint is InService.")
        t.move_endpoint(endpoint, EndpointStatus.IN_SERVICE)
    routing.bump()


def _record(endpoint: Endpoint, deployment: EndpointDeployment, kind: str, message: str) -> None:
    history.record(endpoint, kind, deployment.endpoint_config_name, message)


def _record_shift(endpoint: Endpoint, deployment: EndpointDeployment) -> None:
    steps = len(_traffic_plan(deployment))
    message = (
        f"{deployment.traffic_percent:g}% of the traffic on the new fleet "
        f"(step {deployment.traffic_step} of {steps})."
    )
    _record(endpoint, deployment, DeploymentEventKind.TRAFFIC_SHIFTED, message)


def _prepare(endpoint: Endpoint, deployment: EndpointDeployment) -> None:
    """Check the model data (staged on this node) and resolve the images, once per deployment."""
    resolved = _prepare_here(endpoint, deployment)
    now = timezone.now()
    EndpointDeployment.objects.filter(pk=deployment.pk).update(
        model_data_ready_at=now, resolved_images=resolved
    )
    deployment.model_data_ready_at, deployment.resolved_images = now, resolved


def _prepare_here(endpoint: Endpoint, deployment: EndpointDeployment) -> dict:
    """Stage every model the deployment uses on this node, once per deployment and node (a marker
    in its directory says so), and make sure its images are in this node's engine (pulled when
    missing and allowed; a pull is told in the status message as it goes). Returns the resolved
    images, as DescribeEndpoint shows them."""
    marker = containers.staged_marker(deployment)
    say = functools.partial(t.set_status_message, endpoint)
    resolved = {}
    for name in filter(functools.partial(containers.runs_containers, deployment), deployment.desired):
        definition = containers.container_definition(deployment, name)
        if not marker.exists():
            model_name = containers.variant_spec(deployment, name)["ModelName"]
            hosting_model_data.stage(
                endpoint.account_id, definition, containers.model_dir(deployment, model_name)
            )
        image = definition["Image"]
        resolved[image] = {
            "ResolvedImage": f"{_repository(image)}@{containers.resolve_image(image, say)}",
            "ResolutionTime": time.time(),
        }
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    return resolved


def _repository(image: str) -> str:
    """`registry:5000/repo:tag` -> `registry:5000/repo` (a tag has no `/` after its colon)."""
    name, _, tag = image.rpartition(":")
    return name if name and "/" not in tag else image


def _shift(endpoint: Endpoint, deployment: EndpointDeployment, token: str) -> None:
    if _past_execution_deadline(endpoint, deployment):
        return
    _keep_counts(endpoint, deployment, token)
    config, now = deployment.deployment_config, timezone.now()
    if deployment.traffic_step < len(_traffic_plan(deployment)):
        if now - deployment.last_shift_at >= hosting_rollout.wait_interval(config):
            with transaction.atomic():
                if _decide(deployment, **_traffic_step(deployment, deployment.traffic_step)):
                    _record_shift(endpoint, deployment)
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
        with transaction.atomic():
            if t.move_deployment(old, DeploymentPhase.RETIRING):
                new_config = deployment.endpoint_config_name
                message = f"All traffic on {new_config}: the old fleet is drained, then stopped."
                _record(endpoint, old, DeploymentEventKind.OLD_FLEET_RETIRING, message)
    t.move_deployment(deployment, DeploymentPhase.ACTIVE)
    t.move_endpoint(
        endpoint,
        EndpointStatus.IN_SERVICE,
        endpoint_config_name=deployment.endpoint_config_name,
        failure_reason="",
    )
    routing.bump()


def _serve(endpoint: Endpoint, deployment: EndpointDeployment, token: str) -> None:
    serverless_scaling.scale_down(deployment)  # idle serverless containers: a lower count
    _keep_counts(endpoint, deployment, token)
    if endpoint.endpoint_status != EndpointStatus.UPDATING:
        return
    if endpoint.deployments.exclude(pk=deployment.pk).exclude(phase=DeploymentPhase.RETIRING).exists():
        return  # a blue/green update is under way; it decides when the endpoint is InService
    if _at_strength(deployment) and not deployment.containers.exclude(status__in=LIVE).exists():
        with transaction.atomic():
            if t.move_endpoint(endpoint, EndpointStatus.IN_SERVICE):
                counts = ", ".join(
                    f"{name} {values['DesiredInstanceCount']}" for name, values in deployment.desired.items()
                )
                message = f"Every variant runs its desired instance count: {counts}."
                _record(endpoint, deployment, DeploymentEventKind.CAPACITY_APPLIED, message)


def _retire(endpoint: Endpoint, deployment: EndpointDeployment, token: str) -> None:
    for row in deployment.containers.filter(status__in=LIVE):
        if row.status == ContainerStatus.STARTING:
            _stop_now(row)  # it never had traffic
        else:
            _start_drain(row)
    if not deployment.containers.exists():
        containers.remove_deployment_dir(deployment)
        with transaction.atomic():
            message = "The fleet's containers were drained and stopped; the fleet is removed."
            _record(endpoint, deployment, DeploymentEventKind.FLEET_REMOVED, message)
            deployment.delete()
        # The roles only its models named: no container acts as them any more.
        container_credentials.revoke_roles_except(endpoint.endpoint_arn, containers.execution_roles(endpoint))


PHASE_STEPS = {
    DeploymentPhase.PROVISIONING: _provision,
    DeploymentPhase.SHIFTING: _shift,
    DeploymentPhase.ACTIVE: _serve,
    DeploymentPhase.RETIRING: _retire,
}


def _fail_deployment(endpoint: Endpoint, deployment: EndpointDeployment, reason: str) -> None:
    reason = reason[:1024]
    with transaction.atomic():
        if not t.move_deployment(deployment, DeploymentPhase.RETIRING, failure_reason=reason):
            return
        endpoint.refresh_from_db()
        if endpoint.endpoint_status == EndpointStatus.CREATING:
            t.move_endpoint(endpoint, EndpointStatus.FAILED, failure_reason=reason)
            _record(endpoint, deployment, DeploymentEventKind.DEPLOYMENT_FAILED, reason)
        elif endpoint.endpoint_status == EndpointStatus.UPDATING:
            config_name = deployment.endpoint_config_name
            rolled_back = f"The update to endpoint configuration {config_name} was rolled back: {reason}"
            t.move_endpoint(endpoint, EndpointStatus.IN_SERVICE, failure_reason=rolled_back[:1024])
            _record(endpoint, deployment, DeploymentEventKind.ROLLED_BACK, rolled_back)
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


def _decide(deployment: EndpointDeployment, **fields) -> bool:
    """Record a decision that is not a phase change, only if the deployment is still where we saw it."""
    if not EndpointDeployment.objects.filter(pk=deployment.pk, phase=deployment.phase).update(**fields):
        return False
    for name, value in fields.items():
        setattr(deployment, name, value)
    return True


# --- Container counts ------------------------------------------------------------------------


def _keep_counts(endpoint: Endpoint, deployment: EndpointDeployment, token: str) -> None:
    """Each variant gets exactly its desired number of live containers: place the missing ones
    (new, or replacing those that died or failed /ping) and start those placed on this node,
    drain the extra ones."""
    rows = list(deployment.containers.all())
    for variant_name, desired in deployment.desired.items():
        mine = [row for row in rows if row.variant_name == variant_name]
        live = [row for row in mine if row.status in LIVE]
        missing = _container_count(deployment, variant_name, desired) - len(live)
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
    for row in _here(deployment.containers.filter(status=ContainerStatus.STARTING, started_at__isnull=True)):
        if not _run(endpoint, deployment, row, token):
            return  # an engine that faulted on one start is not asked for the next in this pass


def _container_count(deployment: EndpointDeployment, variant_name: str, desired: dict) -> int:
    """A variant's instances are its containers, except an inference-component endpoint's."""
    return desired["DesiredInstanceCount"] if containers.runs_containers(deployment, variant_name) else 0


def _add_containers(
    endpoint: Endpoint, deployment: EndpointDeployment, variant_name: str, ordinals: range
) -> None:
    # An inference component's copies go onto its endpoint's instances.
    place = (
        component_placement.add_copies
        if components.is_runner_arn(endpoint.endpoint_arn)
        else placement.add_containers
    )
    try:
        place(deployment, variant_name, ordinals)
    except placement.CapacityUnavailable as shortage:
        _capacity_unavailable(endpoint, deployment, variant_name, str(shortage))


def _capacity_unavailable(
    endpoint: Endpoint, deployment: EndpointDeployment, variant_name: str, reason: str
) -> None:
    """Containers that cannot be placed (no live node, or not its GPUs). While GPUs are about to
    be freed (the endpoint's outgoing containers, ended training jobs), wait. Otherwise a new
    fleet fails (create: Failed; update: rolled back), a capacity change of
    UpdateEndpointWeightsAndCapacities is not applied, and a replacement waits for capacity."""
    if placement.gpus_coming_back(endpoint):
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
    refused = f"The capacity change was not applied: {reason}"
    with transaction.atomic():
        _decide(deployment, desired=desired)
        if t.move_endpoint(endpoint, EndpointStatus.IN_SERVICE, failure_reason=refused[:1024]):
            _record(endpoint, deployment, DeploymentEventKind.CAPACITY_NOT_APPLIED, refused)


def _run(endpoint: Endpoint, deployment: EndpointDeployment, row: ServingContainer, token: str) -> bool:
    """Start the row's container; False when the engine failed it through a fault of its own."""
    try:
        with leases.kept_alive(Endpoint, endpoint.pk, token):
            _prepare_here(endpoint, deployment)  # a node's first container of the deployment
        spec = containers.spec_for(endpoint, deployment, row)
        gateway_network.ensure(get_runtime(), spec.extra_networks)
        state = get_runtime().run(spec)
    except EngineFault as fault:
        _engine_fault(endpoint, deployment, row, fault)
        return False
    except (ContainerStartFailed, NoSuchImage, hosting_model_data.ModelDataError) as error:
        _give_up_on_start(endpoint, deployment, row, f"could not be started: {error}")
        return True
    ServingContainer.objects.filter(pk=row.pk).update(started_at=timezone.now(), host_port=state.host_port)
    EndpointDeployment.objects.filter(pk=deployment.pk, engine_faults__gt=0).update(engine_faults=0)
    return True


def _at_strength(deployment: EndpointDeployment) -> bool:
    """Every variant has exactly its desired number of containers, all healthy."""
    rows = list(deployment.containers.filter(status__in=LIVE))
    return all(
        sum(1 for row in rows if row.variant_name == name and row.status == ContainerStatus.IN_SERVICE)
        == _container_count(deployment, name, desired)
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


def _stop_now(row: ServingContainer) -> bool:
    """SIGTERM now when the container is on this node; otherwise its node signals it when the
    chain reaches it (Stopping without a signal time). False when the row moved meanwhile."""
    if row.node.name != nodes.local_name():
        return t.move_container(row, ContainerStatus.STOPPING, stop_signalled_at=None)
    get_runtime().signal(row.name, "SIGTERM")
    return t.move_container(row, ContainerStatus.STOPPING, stop_signalled_at=timezone.now())


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
    elif row.stop_signalled_at is None:  # stopped by a step on another node
        get_runtime().signal(row.name, "SIGTERM")
        ServingContainer.objects.filter(pk=row.pk).update(stop_signalled_at=now)
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


def _settle(endpoint: Endpoint) -> float | None:
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
    if components.is_runner_arn(endpoint.endpoint_arn):  # a component's copies log in its own group
        group = components.log_group(endpoint.endpoint_name)
    return store.get_stream(endpoint.account_id, endpoint.region, group, f"{row.variant_name}/{row.name}")


def _copy_logs(endpoint: Endpoint, row: ServingContainer, force: bool = False) -> None:
    now = time.monotonic()
    if not force and now - _last_log_copy.get(row.name, 0.0) < LOG_COPY_INTERVAL_SECONDS:
        return
    _last_log_copy[row.name] = now
    container_logs.collect(get_runtime(), row.name, _log_stream(endpoint, row))
