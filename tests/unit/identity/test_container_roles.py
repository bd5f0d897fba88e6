"""Whom a container's keys act as: its resource's execution role, as on SageMaker.

AWS behaviour checked: code in a SageMaker container acts as a session of the execution role the
resource passed, named `SageMaker`, the role's path left out of the session ARN (STS ARNs of
assumed roles never carry the path). Public reports show it for each kind of container:
- a training job whose RoleArn is `…:role/service-role/AmazonSageMaker-ExecutionRole-20250704T175024`
  is refused S3 as `User: arn:aws:sts::<account>:assumed-role/AmazonSageMaker-ExecutionRole-
  20250704T175024/SageMaker is not authorized to perform: s3:GetObject`;
- a HyperPod cluster node (Slurm observability setup) is refused ECR as `User: arn:aws:sts::
  <account>:assumed-role/sagemaker-slurm-observability-1-c77364c3ExecRole/SageMaker`: the instance
  group's ExecutionRole, session `SageMaker`;
- AWS's knowledge center ("determine which SageMaker notebook instance made a particular API
  call") shows a notebook's role `arn:aws:iam::111122223333:role/service-role/AmazonSageMaker-
  ExecutionRole` acting as `arn:aws:sts::111122223333:assumed-role/AmazonSageMaker-ExecutionRole/
  SageMaker`, principalId `<role id>:SageMaker`.
No public report shows a serving container's session name; Sageport gives it the same
`SageMaker` as every other container SageMaker starts for a role. And
`sagemaker.get_execution_role()` in such a container turns that session ARN back into the
role's with IAM GetRole (the SDK's `get_caller_identity_arn`, "to get Role path"), which must answer
the ARN the request passed, path included."""

import pytest

from accounts.container_credentials import credentials_for, grant
from accounts.models import AccessKey
from clusters import membership
from tests.unit.clusters.helpers import call, group, register_node

ACCOUNT = "210987654321"
JOB = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/job-1"
ENDPOINT = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:endpoint/ep-1"
SERVICE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/service-role/AmazonSageMaker-ExecutionRole-20250704T175024"


@pytest.fixture
def container_client(make_client):
    """make(token, service): a client signed with the keys a container of that grant fetches."""

    def make(token: str, service: str = "sts"):
        keys = credentials_for(token).as_json()
        return make_client(
            service, key_id=keys["AccessKeyId"], secret=keys["SecretAccessKey"], session_token=keys["Token"]
        )[0]

    return make


def test_a_jobs_container_acts_as_a_sagemaker_session_of_the_jobs_role_named_without_its_path(
    container_client,
):
    identity = container_client(grant(JOB, ACCOUNT, SERVICE_ROLE)).get_caller_identity()

    assert identity["Account"] == ACCOUNT
    assert identity["Arn"] == (
        f"arn:aws:sts::{ACCOUNT}:assumed-role/AmazonSageMaker-ExecutionRole-20250704T175024/SageMaker"
    )
    role_id, _, session = identity["UserId"].partition(":")
    assert role_id.startswith("AROA") and session == "SageMaker"


def test_iam_answers_the_jobs_role_with_the_path_the_job_named(container_client):
    iam = container_client(grant(JOB, ACCOUNT, SERVICE_ROLE), "iam")

    role = iam.get_role(RoleName="AmazonSageMaker-ExecutionRole-20250704T175024")["Role"]

    assert role["Arn"] == SERVICE_ROLE
    assert role["Path"] == "/service-role/"
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "sagemaker.amazonaws.com"
    }


def test_a_resource_without_a_role_acts_as_the_accounts_own(container_client):
    identity = container_client(grant(JOB, ACCOUNT)).get_caller_identity()

    assert identity["Arn"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/SageMakerRole/SageMaker"


def test_an_endpoints_variants_act_as_their_own_models_roles(container_client):
    """Each model of an endpoint passes its own ExecutionRoleArn (CreateModel)."""
    first = grant(ENDPOINT, ACCOUNT, f"arn:aws:iam::{ACCOUNT}:role/FirstModelRole")
    second = grant(ENDPOINT, ACCOUNT, f"arn:aws:iam::{ACCOUNT}:role/SecondModelRole")

    assert first != second
    assert grant(ENDPOINT, ACCOUNT, f"arn:aws:iam::{ACCOUNT}:role/FirstModelRole") == first
    arns = {token: container_client(token).get_caller_identity()["Arn"] for token in (first, second)}
    assert arns == {
        first: f"arn:aws:sts::{ACCOUNT}:assumed-role/FirstModelRole/SageMaker",
        second: f"arn:aws:sts::{ACCOUNT}:assumed-role/SecondModelRole/SageMaker",
    }
    # The keys of each grant are its role's only, from the first one minted on.
    assert set(AccessKey.objects.filter(issued_for=ENDPOINT).values_list("principal", flat=True)) == {
        "assumed-role/FirstModelRole/SageMaker",
        "assumed-role/SecondModelRole/SageMaker",
    }


def test_a_hyperpod_nodes_software_acts_as_its_instance_groups_execution_role(db):
    node = register_node("gpu-a")
    spare = register_node("gpu-b")
    role = "arn:aws:iam::123456789012:role/HyperPodRole"  # the helpers' account
    call("CreateCluster", ClusterName="pods", InstanceGroups=[group("gpus", ExecutionRole=role)])

    assert membership.execution_role(node, "123456789012") == role
    assert membership.execution_role(node, ACCOUNT) is None  # not a cluster of that account
    assert membership.execution_role(spare, "123456789012") is None  # in no cluster
