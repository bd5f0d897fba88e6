"""The routing table API processes load: who may receive traffic, and with what share."""

import pytest
from django.utils import timezone

from capacity.models import Node
from hosting.models import Endpoint, EndpointDeployment, ServingContainer
from hosting.runtime_api.routing import load_table

ARN = "arn:aws:sagemaker:us-east-1:123456789012:endpoint/e"


def endpoint(status: str = "Updating") -> Endpoint:
    now = timezone.now()
    return Endpoint.objects.create(
        account_id="123456789012",
        region="us-east-1",
        endpoint_name="E",
        endpoint_arn=ARN,
        endpoint_config_name="c",
        endpoint_status=status,
        creation_time=now,
        last_modified_time=now,
    )


def deployment(
    owner: Endpoint, phase: str, weights: dict[str, float], traffic: float = 0.0
) -> EndpointDeployment:
    now = timezone.now()
    return EndpointDeployment.objects.create(
        endpoint=owner,
        endpoint_config_name="c",
        snapshot={},
        phase=phase,
        traffic_percent=traffic,
        desired={name: {"DesiredWeight": w, "DesiredInstanceCount": 1} for name, w in weights.items()},
        created_at=now,
        phase_changed_at=now,
    )


def container(
    owner: EndpointDeployment, variant: str, name: str, status: str = "InService", node: str = "node-a"
) -> None:
    now = timezone.now()
    placed_on, _ = Node.objects.get_or_create(
        name=node,
        defaults={"address": f"10.0.0.{Node.objects.count() + 1}", "cpus": 2, "memory_bytes": 1 << 30,
                  "registered_at": now, "heartbeat_at": now},
    )
    ServingContainer.objects.create(
        node=placed_on,
        deployment=owner,
        variant_name=variant,
        ordinal=ServingContainer.objects.count() + 1,
        name=name,
        status=status,
        host_port=9000 + ServingContainer.objects.count(),
    )


@pytest.mark.django_db
def test_shifting_traffic_is_split_between_fleets_then_by_variant_weight():
    owner = endpoint()
    blue = deployment(owner, "Active", {"A": 3.0, "B": 1.0})
    container(blue, "A", "blue-a")
    container(blue, "B", "blue-b")
    green = deployment(owner, "Shifting", {"A": 1.0}, traffic=25.0)
    container(green, "A", "green-a")
    container(green, "A", "green-a-starting", status="Starting")
    container(green, "A", "green-a-draining", status="Draining")

    route = load_table()[ARN]

    shares = {(g.variant_name, tuple(b.container_name for b in g.backends)): g.weight for g in route.groups}
    assert shares == pytest.approx(
        {("A", ("blue-a",)): 0.5625, ("B", ("blue-b",)): 0.1875, ("A", ("green-a",)): 0.25}
    )


@pytest.mark.django_db
def test_fleets_that_take_no_traffic_and_endpoints_not_in_service_route_nowhere():
    owner = endpoint(status="InService")
    container(deployment(owner, "Provisioning", {"A": 1.0}), "A", "new")
    container(deployment(owner, "Retiring", {"A": 1.0}), "A", "old")
    assert load_table()[ARN].groups == ()

    Endpoint.objects.filter(pk=owner.pk).update(endpoint_status="Deleting")
    container(deployment(owner, "Active", {"A": 1.0}), "A", "active")
    route = load_table()[ARN]
    assert route.status == "Deleting" and route.groups == ()


@pytest.mark.django_db
def test_each_container_is_reached_at_its_own_nodes_address():
    owner = endpoint()
    fleet = deployment(owner, "Active", {"A": 1.0})
    container(fleet, "A", "on-a", node="node-a")
    container(fleet, "A", "on-b", node="node-b")

    (group,) = load_table()[owner.endpoint_arn].groups

    where = {backend.container_name: backend.address for backend in group.backends}
    assert where == {"on-a": "10.0.0.1", "on-b": "10.0.0.2"}
