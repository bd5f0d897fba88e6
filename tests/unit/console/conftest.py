"""Accounts with keys, signed-in browsers (Django's test client) and resources to look at."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from accounts.accesskeys import create_access_key
from hosting.models import EndpointDeployment, EndpointStatus
from protocol.context import RequestContext
from tests.unit.hosting.test_placement import make_deployment
from training import services
from training.models import TrainingJob

ACCOUNT_A = "111111111111"
ACCOUNT_B = "222222222222"
REGION = "us-east-1"


def ctx(account_id: str) -> RequestContext:
    return RequestContext(account_id=account_id, region=REGION, access_key_id="AKIATEST")


def job_request(name: str) -> dict:
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "img:latest", "TrainingInputMode": "File"},
        "RoleArn": "arn:aws:iam::111111111111:role/r",
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
    }


def make_job(account_id: str, name: str) -> TrainingJob:
    """A job as CreateTrainingJob makes it (no worker looks at it: nothing commits in these tests)."""
    return services.create_training_job(ctx(account_id), job_request(name))


def in_service_endpoint(account_id: str) -> EndpointDeployment:
    deployment = make_deployment("ml.m5.large")
    deployment.endpoint.__class__.objects.filter(pk=deployment.endpoint.pk).update(
        account_id=account_id,
        endpoint_status=EndpointStatus.IN_SERVICE,
        endpoint_arn=deployment.endpoint.endpoint_arn.replace("123456789012", account_id),
    )
    EndpointDeployment.objects.filter(pk=deployment.pk).update(
        phase="Active", phase_changed_at=timezone.now()
    )
    deployment.refresh_from_db()
    return deployment


def signed_in(account_id: str, client: Client | None = None) -> Client:
    client = client or Client()
    key = create_access_key(account_id)
    response = client.post(
        "/console/login",
        {"kind": "key", "access_key_id": key.access_key_id, "secret_access_key": key.secret_access_key},
    )
    assert response.status_code == 302, response.content
    return client


def operator(client: Client | None = None) -> Client:
    client = client or Client()
    get_user_model().objects.create_user("ops", password="a long operator password", is_staff=True)
    response = client.post(
        "/console/login", {"kind": "operator", "username": "ops", "password": "a long operator password"}
    )
    assert response.status_code == 302
    return client


@pytest.fixture
def account_a(db) -> Client:
    return signed_in(ACCOUNT_A)


@pytest.fixture
def account_b(db) -> Client:
    return signed_in(ACCOUNT_B)
