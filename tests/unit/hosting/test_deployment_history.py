"""Each endpoint's deployment history is written where each step happens: the services record
what a request asked (a new fleet, new weights and counts), the reconciler what it carried out
(health gate, traffic shifts, the old fleet retired and removed, a rollback and its reason). The
API calls go through the services, the worker's part through the fake runtime (see
test_reconciler_steps.py)."""

import pytest

from hosting import history
from hosting import reconciler as hosting
from hosting import services as hosting_services
from hosting.models import DeploymentEventKind as Kind
from hosting.models import DeploymentPhase, Endpoint, EndpointDeploymentEvent, EndpointStatus
from hosting.presenters import deployment_history
from protocol.context import RequestContext
from tests.unit.hosting.test_reconciler_steps import (  # noqa: F401 (fixtures)
    NEW_IMAGE,
    OLD_IMAGE,
    containers_of,
    engine,
    phases,
    settle,
    step,
    this_node,
    timings,
)

pytestmark = pytest.mark.django_db(transaction=True)

CTX = RequestContext(account_id="123456789012", region="us-east-1", access_key_id="AKIATEST")
CANARY = {
    "BlueGreenUpdatePolicy": {
        "TrafficRoutingConfiguration": {
            "Type": "CANARY",
            "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
            "WaitIntervalInSeconds": 0,
        },
        "TerminationWaitInSeconds": 0,
    }
}


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    """The tests take the worker's steps themselves."""
    monkeypatch.setattr(hosting_services, "_nudge", lambda endpoint: None)


def config(name: str, image: str, count: int = 1) -> str:
    hosting_services.create_model(CTX, {"ModelName": f"{name}-model", "PrimaryContainer": {"Image": image}})
    variant = {
        "VariantName": "AllTraffic",
        "ModelName": f"{name}-model",
        "InstanceType": "ml.m5.large",
        "InitialInstanceCount": count,
    }
    hosting_services.create_endpoint_config(
        CTX, {"EndpointConfigName": name, "ProductionVariants": [variant]}
    )
    return name


def steps(endpoint: Endpoint) -> list[tuple[str, str]]:
    """(kind, config) of each recorded step, oldest first."""
    return [(event["Kind"], event["EndpointConfigName"]) for event in deployment_history(endpoint, 100)][::-1]


def healthy(engine, endpoint: Endpoint) -> None:  # noqa: F811 (the fixture's value)
    for deployment in endpoint.deployments.all():
        for name in containers_of(deployment):
            engine.set_health(name, True)


def in_service(engine) -> Endpoint:  # noqa: F811
    endpoint = hosting_services.create_endpoint(
        CTX, {"EndpointName": "shop", "EndpointConfigName": config("blue", OLD_IMAGE)}
    )
    step(endpoint)
    healthy(engine, endpoint)
    step(endpoint)
    assert endpoint.endpoint_status == EndpointStatus.IN_SERVICE
    return endpoint


def test_a_new_endpoint_records_its_fleet_and_the_health_gate_it_passed(engine):  # noqa: F811
    endpoint = in_service(engine)

    newest, oldest = deployment_history(endpoint, 100)
    assert (oldest["Kind"], oldest["EndpointConfigName"]) == (Kind.FLEET_CREATED, "blue")
    assert oldest["Message"] == "CreateEndpoint: AllTraffic 1 × ml.m5.large (weight 1.0)"
    assert (newest["Kind"], newest["Message"]) == (
        Kind.HEALTH_GATE_PASSED,
        "Health gate passed: all 1 container answered /ping; the endpoint is InService.",
    )
    assert newest["Time"] >= oldest["Time"]


def test_a_canary_update_records_each_step_until_the_old_fleet_is_removed(engine):  # noqa: F811
    endpoint = in_service(engine)
    hosting_services.update_endpoint(
        CTX,
        {
            "EndpointName": "shop",
            "EndpointConfigName": config("green", NEW_IMAGE, 2),
            "DeploymentConfig": CANARY,
        },
    )
    step(endpoint)  # the new fleet starts beside the old one
    healthy(engine, endpoint)
    settle(endpoint, lambda: phases(endpoint) == [("green", DeploymentPhase.ACTIVE)])

    assert steps(endpoint) == [
        (Kind.FLEET_CREATED, "blue"),
        (Kind.HEALTH_GATE_PASSED, "blue"),
        (Kind.FLEET_CREATED, "green"),
        (Kind.HEALTH_GATE_PASSED, "green"),
        (Kind.TRAFFIC_SHIFTED, "green"),
        (Kind.TRAFFIC_SHIFTED, "green"),
        (Kind.OLD_FLEET_RETIRING, "blue"),
        (Kind.FLEET_REMOVED, "blue"),
    ]
    messages = [event["Message"] for event in deployment_history(endpoint, 100)][::-1]
    assert messages[2] == "UpdateEndpoint, blue/green CANARY: AllTraffic 2 × ml.m5.large (weight 1.0)"
    assert messages[4:7] == [
        "50% of the traffic on the new fleet (step 1 of 2).",
        "100% of the traffic on the new fleet (step 2 of 2).",
        "All traffic on green: the old fleet is drained, then stopped.",
    ]


def test_a_failed_update_records_the_rollback_with_its_reason(engine):  # noqa: F811
    endpoint = in_service(engine)
    broken = config("broken", NEW_IMAGE)
    hosting_services.update_endpoint(CTX, {"EndpointName": "shop", "EndpointConfigName": broken})
    step(endpoint)
    (new_name,) = containers_of(endpoint.deployments.get(endpoint_config_name="broken"))

    engine.exit(new_name, 3)
    step(endpoint)
    settle(endpoint, lambda: phases(endpoint) == [("blue", DeploymentPhase.ACTIVE)])

    removed, rolled_back, *_ = deployment_history(endpoint, 100)
    assert (rolled_back["Kind"], rolled_back["EndpointConfigName"], rolled_back["Failed"]) == (
        Kind.ROLLED_BACK,
        "broken",
        True,
    )
    assert rolled_back["Message"] == endpoint.failure_reason == (
        "The update to endpoint configuration broken was rolled back: The container "
        f"{new_name} for production variant AllTraffic exited with code 3 before passing /ping."
    )
    assert (removed["Kind"], removed["EndpointConfigName"]) == (Kind.FLEET_REMOVED, "broken")
    assert (Kind.HEALTH_GATE_PASSED, "broken") not in steps(endpoint)


def test_new_weights_and_counts_are_recorded_then_the_counts_once_reached(engine):  # noqa: F811
    endpoint = in_service(engine)
    hosting_services.update_weights_and_capacities(
        CTX,
        {
            "EndpointName": "shop",
            "DesiredWeightsAndCapacities": [
                {"VariantName": "AllTraffic", "DesiredWeight": 3.0, "DesiredInstanceCount": 2}
            ],
        },
    )
    updated = deployment_history(endpoint, 1)[0]
    assert (updated["Kind"], updated["Message"]) == (
        Kind.WEIGHTS_AND_CAPACITIES_UPDATED,
        "AllTraffic weight 1.0 → 3.0; AllTraffic instances 1 → 2",
    )

    step(endpoint)  # a second container starts
    healthy(engine, endpoint)
    settle(endpoint, lambda: endpoint.endpoint_status == EndpointStatus.IN_SERVICE)

    applied = deployment_history(endpoint, 1)[0]
    assert (applied["Kind"], applied["Message"]) == (
        Kind.CAPACITY_APPLIED,
        "Every variant runs its desired instance count: AllTraffic 2.",
    )


def test_the_history_goes_with_the_deleted_endpoint(engine):  # noqa: F811
    endpoint = in_service(engine)
    hosting_services.delete_endpoint(CTX, "shop")

    for _ in range(10):  # drain, stop, remove: a few steps
        Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=None)
        if hosting.reconcile(endpoint.pk) is None:
            break
    assert not Endpoint.objects.filter(pk=endpoint.pk).exists()

    assert not EndpointDeploymentEvent.objects.exists()


def test_an_endpoint_keeps_only_its_newest_steps(engine, monkeypatch):  # noqa: F811
    endpoint = in_service(engine)
    monkeypatch.setattr(history, "MAX_EVENTS", 3)

    for index in range(5):
        history.record(endpoint, Kind.CAPACITY_APPLIED, "blue", f"step {index}")

    assert [event["Message"] for event in deployment_history(endpoint, 100)] == ["step 4", "step 3", "step 2"]
