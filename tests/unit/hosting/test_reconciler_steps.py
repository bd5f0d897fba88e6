"""The endpoint reconciler driven one step at a time through the fake runtime: no Docker, no
Redis (the routing table's version and drain acknowledgements are stood in for), no HTTP (a
container's /ping answers what the test set). Each test plays the containers' part between
steps and checks what the user would see: endpoint status, FailureReason, which fleet serves."""
import itertools

import pytest
from django.utils import timezone

from accounts import container_credentials
from accounts.models import AccessKey, ContainerGrant
from capacity.models import Node
from gateway.network import SERVICES_NETWORK
from hosting import containers as hosting_containers
from hosting import reaper as hosting_reaper
from hosting import reconciler as hosting
from hosting import tasks as hosting_tasks
from hosting import transitions as t
from hosting.health import PingResult
from hosting.models import (
    ContainerStatus,
    DeploymentEventKind,
    DeploymentPhase,
    Endpoint,
    EndpointDeployment,
    EndpointStatus,
    ServingContainer,
)
from hosting.presenters import describe_endpoint
from reconcile import container_events
from reconcile import loop as reconcile
from runtime import labels
from runtime.fake import FakeRuntime
from tests.unit.hosting.test_placement import make_deployment
from tests.unit.training.test_scheduler import make_node

pytestmark = pytest.mark.django_db(transaction=True)

OLD_IMAGE, NEW_IMAGE = "serve:latest", "serve:2"


@pytest.fixture(autouse=True)
def timings(settings):
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = 0.5
    settings.SAGEPORT_HEALTH_CHECK_INTERVAL_SECONDS = 5.0
    settings.SAGEPORT_ROUTING_REFRESH_SECONDS = 0  # a drain need not wait for a refresh here


@pytest.fixture(autouse=True)
def this_node(settings):
    """The node the steps run on: every container is placed here unless a test adds another."""
    settings.SAGEPORT_NODE_NAME = "node-a"
    return make_node("node-a", gpus=4)


@pytest.fixture
def engine(monkeypatch) -> FakeRuntime:
    fake = FakeRuntime(images=(OLD_IMAGE, NEW_IMAGE))
    monkeypatch.setattr(hosting, "get_runtime", lambda: fake)
    monkeypatch.setattr(hosting_containers, "get_runtime", lambda: fake)
    monkeypatch.setattr(hosting, "ping_all", lambda ports: {n: PingResult(*fake.health(n)) for n in ports})
    versions = itertools.count(1)
    monkeypatch.setattr(hosting.routing, "bump", lambda: next(versions))
    monkeypatch.setattr(hosting.routing, "has_drained", lambda name, version: True)  # no request in flight
    return fake


def step(endpoint: Endpoint) -> float | None:
    """One reconcile, as the message that is due now would run it; `endpoint` is reloaded."""
    Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=None)
    delay = hosting.reconcile(endpoint.pk)
    endpoint.refresh_from_db()
    return delay


def phases(endpoint: Endpoint) -> list[tuple[str, str]]:
    return list(endpoint.deployments.values_list("endpoint_config_name", "phase"))


def containers_of(deployment: EndpointDeployment) -> list[str]:
    return list(ServingContainer.objects.filter(deployment_id=deployment.pk).values_list("name", flat=True))


def in_service_endpoint(engine: FakeRuntime) -> tuple[Endpoint, str]:
    """CreateEndpoint carried out: Provisioning → (healthy) → Active, InService."""
    deployment = make_deployment("ml.m5.large")
    endpoint = deployment.endpoint
    step(endpoint)
    (name,) = containers_of(deployment)
    assert engine.containers[name].state.running
    assert endpoint.endpoint_status == EndpointStatus.CREATING  # not healthy yet

    engine.set_health(name, True)
    assert step(endpoint) == 5.0  # steady: the health-check interval

    assert endpoint.endpoint_status == EndpointStatus.IN_SERVICE
    assert phases(endpoint) == [("config", DeploymentPhase.ACTIVE)]
    assert ServingContainer.objects.get(name=name).status == ContainerStatus.IN_SERVICE
    return endpoint, name


def start_update(endpoint: Endpoint, config_name: str = "config-2") -> EndpointDeployment:
    """UpdateEndpoint: a new fleet for `config_name`, rolled out blue/green all at once."""
    assert t.move_endpoint(endpoint, EndpointStatus.UPDATING)
    now = timezone.now()
    variant = {"VariantName": "AllTraffic", "ModelName": "model-2", "InstanceType": "ml.m5.large"}
    return EndpointDeployment.objects.create(
        endpoint=endpoint, endpoint_config_name=config_name,
        snapshot={
            "EndpointConfig": {"ProductionVariants": [variant]},
            "Models": {"model-2": {"PrimaryContainer": {"Image": NEW_IMAGE, "Environment": {}}}},
        },
        desired={"AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": 1}},
        deployment_config={"BlueGreenUpdatePolicy": {"TerminationWaitInSeconds": 0}},
        created_at=now, phase_changed_at=now,
    )


def settle(endpoint: Endpoint, done, limit: int = 10) -> None:
    for _ in range(limit):
        if done():
            return
        step(endpoint)
    raise AssertionError(f"not settled after {limit} steps: {phases(endpoint)}")


def test_create_endpoint_provisions_a_healthy_fleet_and_goes_in_service(engine):
    endpoint, name = in_service_endpoint(engine)

    spec = engine.containers[name].spec
    assert (spec.image, spec.command, spec.published_port) == (OLD_IMAGE, ["serve"], 8080)
    assert spec.labels[labels.RESOURCE] == endpoint.endpoint_arn
    assert spec.labels[labels.ROLE] == labels.SERVING_ROLE


def test_a_new_endpoint_whose_container_exits_before_passing_ping_fails(engine):
    deployment = make_deployment("ml.m5.large")
    endpoint = deployment.endpoint
    step(endpoint)
    (name,) = containers_of(deployment)

    engine.print(name, "ModuleNotFoundError: No module named 'flask'", stream="stderr")
    engine.exit(name, 1)
    step(endpoint)

    assert endpoint.endpoint_status == EndpointStatus.FAILED
    assert endpoint.failure_reason == (
        f"The container {name} for production variant AllTraffic exited with code 1 before passing "
        "/ping. Last output:\nModuleNotFoundError: No module named 'flask'"
    )
    settle(endpoint, lambda: not EndpointDeployment.objects.filter(endpoint=endpoint).exists())
    assert engine.containers == {}


class FaultsOnEveryStart(dict):
    """FakeRuntime.faulting for an engine that fails every container start through its own fault."""

    def __init__(self, fault: str):
        super().__init__()
        self.fault = fault

    def __contains__(self, name: object) -> bool:
        return True

    def pop(self, name, *default) -> str:
        return self.fault


def test_a_container_the_engine_fails_to_start_through_its_own_fault_is_started_again(engine):
    deployment = make_deployment("ml.m5.large")
    endpoint = deployment.endpoint
    first = hosting_containers.container_name(deployment, "AllTraffic", 1, "node-a")
    engine.faulting[first] = "no available IPv4 addresses on this network's address pools"

    settle(endpoint, lambda: any(container.state.running for container in engine.containers.values()))

    assert endpoint.endpoint_status == EndpointStatus.CREATING  # not failed: the model is not to blame
    (name,) = engine.containers
    engine.set_health(name, True)
    settle(endpoint, lambda: endpoint.endpoint_status == EndpointStatus.IN_SERVICE)
    (event,) = endpoint.events.filter(kind=DeploymentEventKind.ENGINE_FAULT)
    assert "through a fault of its own" in event.message and "no available IPv4 addresses" in event.message


def test_an_engine_fault_costs_a_fleet_one_start_a_pass_and_a_start_that_works_resets_the_count(engine):
    deployment = make_deployment("ml.m5.large")
    EndpointDeployment.objects.filter(pk=deployment.pk).update(
        desired={"AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": 3}}
    )
    endpoint = deployment.endpoint
    engine.faulting = FaultsOnEveryStart("timed out attaching the network")  # for one pass
    step(endpoint)
    engine.faulting = {}

    assert endpoint.events.filter(kind=DeploymentEventKind.ENGINE_FAULT).count() == 1  # not one a container
    settle(endpoint, lambda: len([c for c in engine.containers.values() if c.state.running]) == 3)
    for name in engine.containers:
        engine.set_health(name, True)
    settle(endpoint, lambda: endpoint.endpoint_status == EndpointStatus.IN_SERVICE)
    deployment.refresh_from_db()
    assert deployment.engine_faults == 0  # the next fault starts a new count


def test_a_new_endpoint_fails_once_the_engine_has_faulted_on_every_start_it_allows(engine):
    deployment = make_deployment("ml.m5.large")
    endpoint = deployment.endpoint
    engine.faulting = FaultsOnEveryStart("failed to set up container networking")

    settle(endpoint, lambda: endpoint.endpoint_status == EndpointStatus.FAILED)

    assert "could not be started (3 faults of the engine in a row)" in endpoint.failure_reason
    assert "failed to set up container networking" in endpoint.failure_reason
    faults = endpoint.events.filter(kind=DeploymentEventKind.ENGINE_FAULT).count()
    assert faults == hosting.ENGINE_FAULT_STARTS - 1  # the last one is the failure itself


def test_blue_green_update_provisions_shifts_then_retires_the_old_fleet(engine):
    endpoint, old_name = in_service_endpoint(engine)
    new = start_update(endpoint)

    step(endpoint)  # Provisioning: the new fleet starts beside the old one
    (new_name,) = containers_of(new)
    assert phases(endpoint) == [
        ("config", DeploymentPhase.ACTIVE),
        ("config-2", DeploymentPhase.PROVISIONING),
    ]
    assert engine.containers[new_name].spec.image == NEW_IMAGE

    engine.set_health(new_name, True)
    step(endpoint)  # healthy: traffic shifts to it (all at once)
    assert phases(endpoint) == [("config", DeploymentPhase.ACTIVE), ("config-2", DeploymentPhase.SHIFTING)]
    assert EndpointDeployment.objects.get(pk=new.pk).traffic_percent == 100.0
    assert endpoint.endpoint_status == EndpointStatus.UPDATING

    step(endpoint)  # everything shifted, no baking period: the update completes
    assert phases(endpoint) == [("config", DeploymentPhase.RETIRING), ("config-2", DeploymentPhase.ACTIVE)]
    assert endpoint.endpoint_status == EndpointStatus.IN_SERVICE
    assert endpoint.endpoint_config_name == "config-2"

    step(endpoint)  # the old fleet drains (no request in flight) and gets SIGTERM
    assert engine.containers[old_name].signals == ["SIGTERM"]
    assert ServingContainer.objects.get(name=old_name).status == ContainerStatus.STOPPING
    settle(endpoint, lambda: phases(endpoint) == [("config-2", DeploymentPhase.ACTIVE)])
    assert list(engine.containers) == [new_name]  # the old container was drained, stopped, removed
    assert endpoint.failure_reason == ""


def test_a_failed_update_is_rolled_back_and_the_old_fleet_keeps_serving(engine):
    endpoint, old_name = in_service_endpoint(engine)
    new = start_update(endpoint)
    step(endpoint)
    (new_name,) = containers_of(new)

    engine.exit(new_name, 3)
    step(endpoint)

    assert (endpoint.endpoint_status, endpoint.endpoint_config_name) == (EndpointStatus.IN_SERVICE, "config")
    assert endpoint.failure_reason == (
        "The update to endpoint configuration config-2 was rolled back: The container "
        f"{new_name} for production variant AllTraffic exited with code 3 before passing /ping."
    )
    settle(endpoint, lambda: phases(endpoint) == [("config", DeploymentPhase.ACTIVE)])
    assert list(engine.containers) == [old_name] and engine.containers[old_name].state.running
    assert ServingContainer.objects.get(name=old_name).status == ContainerStatus.IN_SERVICE


def test_a_container_that_vanishes_while_in_service_is_replaced(engine):
    endpoint, name = in_service_endpoint(engine)

    engine.vanish(name)
    step(endpoint)  # drained out of the routing table, a replacement started

    rows = dict(ServingContainer.objects.values_list("name", "status"))
    (replacement,) = [row for row in rows if row != name]
    assert rows[name] in (ContainerStatus.DRAINING, ContainerStatus.STOPPING)
    assert engine.containers[replacement].state.running
    assert ServingContainer.objects.get(name=name).last_problem == (
        "disappeared from the container engine while in service."
    )
    engine.set_health(replacement, True)
    settle(endpoint, lambda: list(ServingContainer.objects.values_list("name", flat=True)) == [replacement])
    assert endpoint.endpoint_status == EndpointStatus.IN_SERVICE


def test_a_bug_during_an_update_rolls_it_back_after_bounded_retries(engine, monkeypatch):
    endpoint, old_name = in_service_endpoint(engine)
    start_update(endpoint)

    def broken(endpoint, deployment):
        raise KeyError("ResolvedImage")

    monkeypatch.setattr(hosting, "_prepare", broken)
    for _ in range(reconcile.BUG_ATTEMPTS - 1):
        step(endpoint)
        assert endpoint.endpoint_status == EndpointStatus.UPDATING
    step(endpoint)

    assert endpoint.endpoint_status == EndpointStatus.IN_SERVICE
    assert endpoint.failure_reason == (
        "The update to endpoint configuration config-2 was rolled back: InternalServerError: "
        "an internal error stopped the work (KeyError: 'ResolvedImage')"
    )
    assert engine.containers[old_name].state.running


def pending_variant_status(endpoint: Endpoint) -> dict:
    """The VariantStatus DescribeEndpoint shows for the fleet being rolled out."""
    (variant,) = describe_endpoint(endpoint)["PendingDeploymentSummary"]["ProductionVariants"]
    (status,) = variant["VariantStatus"]
    return status


def test_a_serving_container_that_dies_has_its_endpoint_looked_at_at_once_on_its_node(engine, monkeypatch):
    endpoint, name = in_service_endpoint(engine)  # its next look: a health-check interval away
    sent = []
    monkeypatch.setattr(hosting_tasks, "_send", lambda *message: sent.append(message))
    monkeypatch.setattr(container_events, "_interests", {})
    container_events.register(labels.SERVING_ROLE, hosting_tasks.nudge_for_container)
    engine.exit(name, 1)
    assert hosting.reconcile(endpoint.pk) is None  # the poll's message would be early: dropped

    assert container_events.Watcher(engine, "node-a").follow_once()

    assert sent == [(endpoint.pk, "node-a")]
    hosting.reconcile(endpoint.pk)  # the message sent runs the step: the container is replaced
    (replacement,) = [row for row in containers_of(endpoint.deployments.get()) if row != name]
    assert engine.containers[replacement].state.running


def test_an_unreachable_engine_is_in_the_status_message_of_a_new_endpoint_until_it_is_back(engine):
    deployment = make_deployment("ml.m5.large")
    endpoint = deployment.endpoint
    engine.unreachable = True

    step(endpoint)

    assert endpoint.endpoint_status == EndpointStatus.CREATING
    status = pending_variant_status(endpoint)
    assert status["Status"] == "Creating"
    assert status["StatusMessage"].startswith("Waiting for the Docker engine: ")

    engine.unreachable = False
    step(endpoint)

    assert pending_variant_status(endpoint)["StatusMessage"] is None  # dropped from the answer
    assert containers_of(deployment) != []


def test_an_unreachable_engine_during_an_update_is_said_instead_of_the_traffic_share(engine):
    endpoint, _ = in_service_endpoint(engine)
    new = start_update(endpoint)
    step(endpoint)
    (new_name,) = containers_of(new)
    engine.set_health(new_name, True)
    step(endpoint)  # shifting
    engine.unreachable = True

    step(endpoint)

    status = pending_variant_status(endpoint)
    assert status["Status"] == "Baking"
    assert status["StatusMessage"].startswith("Waiting for the Docker engine: ")


def test_a_model_image_pull_reports_its_progress_in_the_status_message(engine, settings):
    settings.SAGEPORT_PULL_MISSING_IMAGES = True
    del engine.images[OLD_IMAGE]
    engine.pullable.add(OLD_IMAGE)
    engine.pull_reports = ["0/2 layers, 3.0 of 9.0 MB", "2/2 layers, 9.0 of 9.0 MB"]
    deployment = make_deployment("ml.m5.large")
    endpoint = deployment.endpoint
    seen = []
    pull = engine.pull_image

    def observed_pull(image, report=None):
        seen.append(pending_variant_status(endpoint)["StatusMessage"])

        def recording(progress):
            report(progress)
            seen.append(pending_variant_status(endpoint)["StatusMessage"])

        pull(image, recording)

    engine.pull_image = observed_pull

    step(endpoint)

    pulling = f"Pulling the model image {OLD_IMAGE}"
    assert seen == [pulling, f"{pulling}: 0/2 layers, 3.0 of 9.0 MB", f"{pulling}: 2/2 layers, 9.0 of 9.0 MB"]
    assert pending_variant_status(endpoint)["StatusMessage"] is None  # the pull is over


def test_a_serving_container_gets_its_endpoints_region_and_credentials_on_the_services_network(engine):
    endpoint, name = in_service_endpoint(engine)

    spec = engine.containers[name].spec
    assert spec.extra_networks == (SERVICES_NETWORK,)
    assert spec.environment["AWS_REGION"] == endpoint.region
    token = ContainerGrant.objects.get(holder=endpoint.endpoint_arn).token
    assert spec.environment["AWS_CONTAINER_AUTHORIZATION_TOKEN"] == token


def test_an_update_to_a_model_with_another_role_revokes_the_old_roles_credentials(engine):
    endpoint, old_name = in_service_endpoint(engine)
    old_token = ContainerGrant.objects.get(holder=endpoint.endpoint_arn).token
    assert container_credentials.credentials_for(old_token) is not None
    new = start_update(endpoint)
    new.snapshot["Models"]["model-2"]["ExecutionRoleArn"] = "arn:aws:iam::123456789012:role/Other"
    new.save()

    step(endpoint)
    (new_name,) = containers_of(new)
    engine.set_health(new_name, True)
    settle(endpoint, lambda: phases(endpoint) == [("config-2", DeploymentPhase.ACTIVE)])

    (kept,) = ContainerGrant.objects.filter(holder=endpoint.endpoint_arn)
    assert kept.role_arn == "arn:aws:iam::123456789012:role/Other"
    assert engine.containers[new_name].spec.environment["AWS_CONTAINER_AUTHORIZATION_TOKEN"] == kept.token
    assert container_credentials.credentials_for(old_token) is None  # the old fleet's keys stop working
    assert not AccessKey.objects.filter(issued_for=endpoint.endpoint_arn, principal="").exists()


def test_deleting_an_endpoint_revokes_its_containers_credentials(engine):
    endpoint, name = in_service_endpoint(engine)
    assert t.move_endpoint(endpoint, EndpointStatus.DELETING)

    for _ in range(10):  # drain, stop, remove: a few steps
        Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=None)
        if hosting.reconcile(endpoint.pk) is None:
            break

    assert not Endpoint.objects.filter(pk=endpoint.pk).exists()
    assert not ContainerGrant.objects.exists()


# --- Several nodes ----------------------------------------------------------------------------
# One fake engine stands for both nodes' engines: the node label tells their containers apart,
# as it does when two nodes share one Docker engine.


def two_node_fleet(engine, settings) -> tuple[Endpoint, EndpointDeployment]:
    """An endpoint of two containers, one on node-a and one on node-b, both in service."""
    make_node("node-b", gpus=0)
    deployment = make_deployment("ml.m5.large")
    EndpointDeployment.objects.filter(pk=deployment.pk).update(
        desired={"AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": 2}}
    )
    endpoint = deployment.endpoint
    on_node("node-a", settings, endpoint)
    on_node("node-b", settings, endpoint)
    for name in containers_of(deployment):
        engine.set_health(name, True)
    on_node("node-a", settings, endpoint)
    on_node("node-b", settings, endpoint)
    assert endpoint.endpoint_status == EndpointStatus.IN_SERVICE
    return endpoint, deployment


def on_node(node: str, settings, endpoint: Endpoint) -> float | None:
    settings.SAGEPORT_NODE_NAME = node
    return step(endpoint)


def placed(deployment: EndpointDeployment) -> dict[str, str]:
    return dict(deployment.containers.values_list("name", "node__name"))


def test_each_node_starts_only_the_containers_placed_on_it(engine, settings):
    make_node("node-b", gpus=0)
    deployment = make_deployment("ml.m5.large")
    EndpointDeployment.objects.filter(pk=deployment.pk).update(
        desired={"AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": 2}}
    )

    on_node("node-a", settings, deployment.endpoint)
    where = placed(deployment)
    assert sorted(where.values()) == ["node-a", "node-b"]
    assert {name: c.spec.labels[labels.NODE] for name, c in engine.containers.items()} == {
        name: "node-a" for name, node in where.items() if node == "node-a"
    }

    on_node("node-b", settings, deployment.endpoint)
    assert {name: c.spec.labels[labels.NODE] for name, c in engine.containers.items()} == where


def test_the_chain_looks_at_each_of_two_nodes_twice_as_often(engine, settings):
    endpoint, _ = two_node_fleet(engine, settings)
    assert on_node("node-a", settings, endpoint) == 2.5  # the health-check interval over two nodes


def test_a_container_on_another_node_is_stopped_by_its_own_node(engine, settings):
    endpoint, deployment = two_node_fleet(engine, settings)
    on_b = next(name for name, node in placed(deployment).items() if node == "node-b")
    desired = {"AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": 1}}
    EndpointDeployment.objects.filter(pk=deployment.pk).update(desired=desired)
    ServingContainer.objects.filter(name=on_b).update(status=ContainerStatus.STARTING)  # drops first

    on_node("node-a", settings, endpoint)
    assert ServingContainer.objects.get(name=on_b).status == ContainerStatus.STOPPING
    assert engine.containers[on_b].signals == []  # node-a never touches node-b's engine

    on_node("node-b", settings, endpoint)
    assert engine.containers[on_b].signals == ["SIGTERM"]


def test_containers_of_a_lost_node_are_replaced_on_a_live_node(engine, settings):
    endpoint, deployment = two_node_fleet(engine, settings)
    on_b = next(name for name, node in placed(deployment).items() if node == "node-b")
    Node.objects.filter(name="node-b").update(lost_at=timezone.now())

    on_node("node-a", settings, endpoint)

    assert sorted(placed(deployment).values()) == ["node-a", "node-a"]  # a replacement on node-a
    assert on_b not in placed(deployment)
    assert endpoint.endpoint_status == EndpointStatus.IN_SERVICE  # the other container serves on
    assert engine.containers[on_b].state.running  # left to node-b, should it come back


def test_a_new_fleet_that_loses_a_node_while_provisioning_fails(engine, settings):
    make_node("node-b", gpus=0)
    deployment = make_deployment("ml.m5.large")
    EndpointDeployment.objects.filter(pk=deployment.pk).update(
        desired={"AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": 2}}
    )
    on_node("node-a", settings, deployment.endpoint)
    on_b = next(name for name, node in placed(deployment).items() if node == "node-b")
    Node.objects.filter(name="node-b").update(lost_at=timezone.now())

    on_node("node-a", settings, deployment.endpoint)

    endpoint = Endpoint.objects.get(pk=deployment.endpoint_id)
    assert endpoint.endpoint_status == EndpointStatus.FAILED
    assert endpoint.failure_reason == (
        f"The container {on_b} for production variant AllTraffic was lost with its node node-b, "
        "which stopped sending heartbeats."
    )


def test_a_node_that_comes_back_removes_the_containers_it_no_longer_holds(engine, settings, monkeypatch):
    endpoint, deployment = two_node_fleet(engine, settings)
    on_b = next(name for name, node in placed(deployment).items() if node == "node-b")
    Node.objects.filter(name="node-b").update(lost_at=timezone.now())
    on_node("node-a", settings, endpoint)  # forgets it
    monkeypatch.setattr(hosting_reaper, "get_runtime", lambda: engine)

    settings.SAGEPORT_NODE_NAME = "node-b"
    hosting_reaper.reap_serving_orphans()

    assert on_b not in engine.containers
    assert sorted(placed(deployment)) == sorted(engine.containers)  # node-a's are untouched
