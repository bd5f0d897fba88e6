"""The two writers of a serverless variant's container count: a request raises it (never past
MaxConcurrency, and the endpoint is looked at now), the reconciler's idle check lowers it (never
below ProvisionedConcurrency; without Redis it stops nothing). Each publishes SageMaker's
serverless metrics."""

from datetime import timedelta

import redis
from django.utils import timezone

from hosting import serverless_scaling
from hosting.models import DeploymentPhase, Endpoint, EndpointDeployment
from hosting.serverless_slots import Usage
from logs.models import MetricStatisticSet
from tests.unit.hosting.test_placement import add, make_deployment
from tests.unit.training.test_scheduler import make_node


def _serverless(count: int, provisioned: int = 0) -> EndpointDeployment:
    deployment = make_deployment("ml.m5.large")
    config = {"MemorySizeInMB": 1024, "MaxConcurrency": 3}
    if provisioned:
        config["ProvisionedConcurrency"] = provisioned
    deployment.desired = {
        "AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": count, "ServerlessConfig": config}
    }
    deployment.phase = DeploymentPhase.ACTIVE
    deployment.save()
    return deployment


def _count(deployment: EndpointDeployment) -> int:
    return EndpointDeployment.objects.get(pk=deployment.pk).desired["AllTraffic"]["DesiredInstanceCount"]


def test_a_request_raises_the_count_up_to_max_concurrency_and_makes_the_endpoint_due(db):
    deployment = _serverless(count=0)
    later = timezone.now() + timedelta(hours=1)
    Endpoint.objects.filter(pk=deployment.endpoint_id).update(next_check_at=later)
    assert serverless_scaling.scale_up(deployment.pk, "AllTraffic", 1) == deployment.endpoint_id
    assert _count(deployment) == 1
    assert Endpoint.objects.get(pk=deployment.endpoint_id).next_check_at < later
    assert serverless_scaling.scale_up(deployment.pk, "AllTraffic", 1) is None  # already there
    serverless_scaling.scale_up(deployment.pk, "AllTraffic", 9)
    assert _count(deployment) == 3


def test_a_retired_deployment_is_not_scaled(db):
    deployment = _serverless(count=0)
    EndpointDeployment.objects.filter(pk=deployment.pk).update(phase=DeploymentPhase.RETIRING)
    assert serverless_scaling.scale_up(deployment.pk, "AllTraffic", 1) is None
    assert _count(deployment) == 0


def test_idle_lowers_the_count_to_provisioned_and_samples_the_concurrency(db, monkeypatch):
    deployment = _serverless(count=3, provisioned=1)
    monkeypatch.setattr(serverless_scaling.serverless_slots, "usage", lambda pk, v: Usage(0, 0))
    serverless_scaling.scale_down(deployment)
    assert _count(deployment) == 1 and deployment.desired["AllTraffic"]["DesiredInstanceCount"] == 1
    names = set(MetricStatisticSet.objects.values_list("metric_name", flat=True))
    assert "ServerlessConcurrentExecutionsUtilization" in names


def test_without_redis_nothing_is_stopped(db, monkeypatch):
    deployment = _serverless(count=2)

    def away(pk, variant):
        raise redis.ConnectionError("Redis is away")

    monkeypatch.setattr(serverless_scaling.serverless_slots, "usage", away)
    serverless_scaling.scale_down(deployment)
    assert _count(deployment) == 2


def test_the_reconciler_looks_soon_while_a_serverless_container_starts(db):
    deployment = _serverless(count=1)
    endpoint = deployment.endpoint
    assert serverless_scaling.sooner_while_cold_starting(endpoint, 2.0) == 2.0
    make_node()
    add(deployment)  # a Starting container
    assert (
        serverless_scaling.sooner_while_cold_starting(endpoint, 2.0)
        == serverless_scaling.COLD_START_LOOK_SECONDS
    )
    assert serverless_scaling.sooner_while_cold_starting(endpoint, None) is None  # deleted: no look
