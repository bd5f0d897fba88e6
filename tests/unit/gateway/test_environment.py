"""What a container is given, checked against the installed botocore: the variables it reads
for each service's endpoint, the hosts its container provider accepts, the region it picks."""

import boto3
import botocore.session
import pytest
from botocore.utils import ContainerMetadataFetcher

from accounts.models import ContainerGrant
from gateway.environment import container_reach
from gateway.network import SERVICES_NETWORK

JOB = "arn:aws:sagemaker:eu-west-1:111122223333:training-job/job-1"
ROLE = "arn:aws:iam::111122223333:role/service-role/TrainingRole"


@pytest.fixture(autouse=True)
def ports(settings):
    settings.SAGEPORT_SERVICES_API_PORT = 18080
    settings.SAGEPORT_SERVICES_RUNTIME_PORT = 18081
    settings.SAGEPORT_SERVICES_S3_PORT = 18333


def reach(isolated: bool = False, role_arn: str | None = ROLE):
    return container_reach(
        isolated=isolated, holder=JOB, account_id="111122223333", region="eu-west-1", role_arn=role_arn
    )


def test_a_network_isolated_container_gets_nothing(db):
    given = reach(isolated=True)

    assert (given.environment, given.networks) == ({}, ())
    assert not ContainerGrant.objects.exists()  # no credentials exist for it either


def test_any_other_container_joins_the_services_network_with_region_endpoints_and_credentials(db):
    given = reach()

    api = "http://169.254.170.2:18080"
    assert given.networks == (SERVICES_NETWORK,)
    assert given.environment == {
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL_S3": "http://169.254.170.2:18333",
        "AWS_ENDPOINT_URL": "http://169.254.170.2:18333",
        "AWS_ENDPOINT_URL_SAGEMAKER": api,
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": "http://169.254.170.2:18081",  # the data plane
        "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": api,
        "AWS_ENDPOINT_URL_CLOUDWATCH": api,
        "AWS_ENDPOINT_URL_STS": api,
        "AWS_ENDPOINT_URL_IAM": api,
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": f"{api}/v2/credentials",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN": ContainerGrant.objects.get(holder=JOB, role_arn=ROLE).token,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def test_the_credentials_act_as_the_resources_role_or_the_accounts_own_without_one(db):
    with_role, without = reach(), reach(role_arn=None)

    granted = {grant.token: grant.role_arn for grant in ContainerGrant.objects.filter(holder=JOB)}
    assert granted[with_role.environment["AWS_CONTAINER_AUTHORIZATION_TOKEN"]] == ROLE
    assert granted[without.environment["AWS_CONTAINER_AUTHORIZATION_TOKEN"]] == ""


@pytest.mark.parametrize(
    ("service", "port"),
    [
        ("s3", 18333),
        ("sagemaker", 18080),
        ("sagemaker-runtime", 18081),
        ("logs", 18080),
        ("cloudwatch", 18080),
    ],
)
def test_botocore_sends_each_service_where_the_container_was_told(db, monkeypatch, service, port):
    for name, value in reach().environment.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)

    client = boto3.Session(botocore_session=botocore.session.Session()).client(
        service, aws_access_key_id="AKIAEXAMPLE", aws_secret_access_key="secret"
    )

    assert client.meta.endpoint_url == f"http://169.254.170.2:{port}"
    assert client.meta.region_name == "eu-west-1"


def test_botocore_fetches_credentials_from_the_uri_it_is_given(db):
    uri = reach().environment["AWS_CONTAINER_CREDENTIALS_FULL_URI"]

    ContainerMetadataFetcher()._validate_allowed_url(uri)  # raises for a host it would refuse
