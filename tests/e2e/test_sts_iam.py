"""STS and IAM on the live stack, through boto3, the AWS CLI and the SageMaker SDK, each
configured by `<data>/env` alone (AWS_ENDPOINT_URL_STS / AWS_ENDPOINT_URL_IAM).

AWS behaviour checked (tests/unit/identity cite the details): GetCallerIdentity's Account/Arn/
UserId; AssumeRole's `ASIA…` credentials with a session token, usable on every service of the
account (SageMaker, CloudWatch Logs, the data plane, S3) and refused without their token; a role of
another account refused with AccessDenied; IAM's GetRole/CreateRole/ListRoles/DeleteRole;
`sagemaker.get_execution_role()` answers the role of an assumed-role caller (the SDK's
get_caller_identity_arn: STS, then IAM GetRole for the role's path)."""

import json
import os
import subprocess
import uuid

import boto3
import pytest
import sagemaker.session as sdk_session_module
from botocore.exceptions import ClientError

from devstack.stack import default_bucket_name
from tests.conftest import read_env_file
from tests.e2e.test_aws_cli import AWS_CLI, aws, cli_environment

TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


@pytest.fixture
def env_only(stack, monkeypatch):
    """The process environment a user gets from `source .sageport/env` (and nothing else of AWS)."""
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in read_env_file(stack.data_dir / "env").items():
        monkeypatch.setenv(name, value)


def _temporary(credentials: dict) -> dict:
    return {
        "aws_access_key_id": credentials["AccessKeyId"],
        "aws_secret_access_key": credentials["SecretAccessKey"],
        "aws_session_token": credentials["SessionToken"],
    }


def _assume(role: str = "SageMakerRole", session: str = "e2e") -> dict:
    account = boto3.client("sts").get_caller_identity()["Account"]
    role_arn = f"arn:aws:iam::{account}:role/{role}"
    return boto3.client("sts").assume_role(RoleArn=role_arn, RoleSessionName=session)


def test_boto3_gets_the_caller_identity_from_the_stack(stack, env_only):
    identity = boto3.client("sts").get_caller_identity()

    assert identity["Account"] == stack.account_id
    assert identity["Arn"] == f"arn:aws:sts::{stack.account_id}:assumed-role/SageMakerRole/SageMaker"


def test_the_aws_cli_gets_the_caller_identity_from_the_stack(stack):
    identity = aws(stack, "sts", "get-caller-identity")

    assert identity["Account"] == stack.account_id
    assert identity["UserId"].endswith(":SageMaker")


def test_the_cli_assumes_a_role_whose_credentials_list_training_jobs_and_objects(stack):
    role_arn = f"arn:aws:iam::{stack.account_id}:role/SageMakerRole"
    answer = aws(stack, "sts", "assume-role", "--role-arn", role_arn, "--role-session-name", "cli")
    credentials = answer["Credentials"]

    listed = _aws_as(stack, credentials, "sagemaker", "list-training-jobs")
    identity = _aws_as(stack, credentials, "sts", "get-caller-identity")
    bucket = default_bucket_name(stack.region, stack.account_id)
    objects = _aws_as(stack, credentials, "s3api", "list-objects-v2", "--bucket", bucket, "--max-items", "1")

    assert credentials["AccessKeyId"].startswith("ASIA")
    assert "TrainingJobSummaries" in listed
    assert isinstance(objects, dict)  # the S3 gateway took the session token: no error
    assert identity["Arn"] == f"arn:aws:sts::{stack.account_id}:assumed-role/SageMakerRole/cli"


def test_assumed_credentials_reach_every_service_of_the_account(stack, env_only):
    temporary = _temporary(_assume()["Credentials"])
    bucket = default_bucket_name(stack.region, stack.account_id)  # the account's own bucket
    key = f"sts-e2e/{uuid.uuid4().hex}"

    jobs = boto3.client("sagemaker", **temporary).list_training_jobs()
    groups = boto3.client("logs", **temporary).describe_log_groups()
    s3 = boto3.client("s3", **temporary)
    s3.put_object(Bucket=bucket, Key=key, Body=b"written with a session token")
    read = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    with pytest.raises(ClientError) as runtime_error:  # authenticated: the endpoint is what is missing
        boto3.client("sagemaker-runtime", **temporary).invoke_endpoint(EndpointName="nothing", Body=b"{}")

    assert jobs["TrainingJobSummaries"] is not None and groups["logGroups"] is not None
    assert read == b"written with a session token"
    assert runtime_error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    s3.delete_object(Bucket=bucket, Key=key)


def test_assumed_credentials_without_their_token_are_refused_everywhere(stack, env_only):
    credentials = _assume()["Credentials"]
    tokenless = {**_temporary(credentials), "aws_session_token": None}
    bucket = default_bucket_name(stack.region, stack.account_id)

    with pytest.raises(ClientError) as api_error:
        boto3.client("sagemaker", **tokenless).list_training_jobs()
    with pytest.raises(ClientError) as s3_error:
        boto3.client("s3", **tokenless).list_objects_v2(Bucket=bucket)
    with pytest.raises(ClientError) as runtime_error:
        boto3.client("sagemaker-runtime", **tokenless).invoke_endpoint(EndpointName="any", Body=b"{}")

    assert api_error.value.response["Error"]["Code"] == "UnrecognizedClientException"
    assert s3_error.value.response["Error"]["Code"] == "InvalidToken"
    assert runtime_error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_a_role_of_another_account_is_refused(stack, env_only):
    other_role = "arn:aws:iam::111122223333:role/SageMakerRole"

    with pytest.raises(ClientError) as refused:
        boto3.client("sts").assume_role(RoleArn=other_role, RoleSessionName="e2e")
    cli = _aws_failing(stack, "sts", "assume-role", "--role-arn", other_role, "--role-session-name", "cli")

    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    assert refused.value.response["Error"]["Message"] == (
        f"User: arn:aws:sts::{stack.account_id}:assumed-role/SageMakerRole/SageMaker is not authorized "
        f"to perform: sts:AssumeRole on resource: {other_role}"
    )
    assert "(AccessDenied)" in cli


def test_the_cli_creates_gets_lists_and_deletes_a_role(stack):
    name = f"e2e-{uuid.uuid4().hex[:8]}"

    created = aws(
        stack,
        "iam",
        "create-role",
        "--role-name",
        name,
        "--path",
        "/service-role/",
        "--assume-role-policy-document",
        json.dumps(TRUST),
    )
    fetched = aws(stack, "iam", "get-role", "--role-name", name)
    listed = aws(stack, "iam", "list-roles", "--path-prefix", "/service-role/")
    again = _aws_failing(
        stack, "iam", "create-role", "--role-name", name, "--assume-role-policy-document", json.dumps(TRUST)
    )
    aws(stack, "iam", "delete-role", "--role-name", name)
    gone = _aws_failing(stack, "iam", "delete-role", "--role-name", name)

    arn = f"arn:aws:iam::{stack.account_id}:role/service-role/{name}"
    assert created["Role"]["Arn"] == arn and fetched["Role"]["Arn"] == arn
    assert fetched["Role"]["AssumeRolePolicyDocument"] == TRUST
    assert name in [role["RoleName"] for role in listed["Roles"]]
    assert "(EntityAlreadyExists)" in again
    assert "(NoSuchEntity)" in gone


def test_boto3_gets_a_role_nobody_created_that_sagemaker_may_assume(stack, env_only):
    role = boto3.client("iam").get_role(RoleName="SageMakerRole")["Role"]

    assert role["Arn"] == f"arn:aws:iam::{stack.account_id}:role/SageMakerRole"
    assert role["AssumeRolePolicyDocument"] == TRUST


def test_sdk_get_execution_role_answers_the_callers_role(stack, env_only, monkeypatch):
    """The SDK v2 builds its STS client with an explicit regional AWS endpoint
    (`sts_regional_endpoint`), which botocore prefers to AWS_ENDPOINT_URL_STS: outside a notebook,
    get_execution_role() asks AWS's STS whatever the environment says (docs/api.md, "STS and IAM").
    Here that one URL is pointed at the stack; everything else (the IAM GetRole that follows, the
    parsing of both answers) is the SDK's own."""
    assert sdk_session_module.sts_regional_endpoint(stack.region).endswith(".amazonaws.com")
    monkeypatch.setattr(sdk_session_module, "sts_regional_endpoint", lambda region: stack.endpoint_url)

    role = sdk_session_module.get_execution_role(sdk_session_module.Session())

    assert role == f"arn:aws:iam::{stack.account_id}:role/SageMakerRole"


def test_sdk_get_execution_role_of_assumed_credentials_is_the_assumed_role(stack, env_only, monkeypatch):
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    boto3.client("iam").create_role(
        RoleName=name, Path="/service-role/", AssumeRolePolicyDocument=json.dumps(TRUST)
    )
    temporary = _temporary(_assume(f"service-role/{name}")["Credentials"])
    monkeypatch.setattr(sdk_session_module, "sts_regional_endpoint", lambda region: stack.endpoint_url)

    session = sdk_session_module.Session(boto_session=boto3.Session(**temporary, region_name=stack.region))
    role = sdk_session_module.get_execution_role(session)

    # The session's ARN drops the path; the SDK finds it again with GetRole.
    assert role == f"arn:aws:iam::{stack.account_id}:role/service-role/{name}"


SDK_V3_ROLE_SCRIPT = """
from sagemaker.train.defaults import TrainDefaults
print(TrainDefaults.get_role())
"""


def test_sdk_v3_resolves_and_validates_the_callers_role_on_the_stack(stack, sdk_v3_python, tmp_path):
    """What ModelTrainer does without `role=` (sagemaker.core.helper.iam_role_resolver): STS
    GetCallerIdentity, IAM GetRole of the session's role, SimulatePrincipalPolicy (every action
    allowed) and GetRole again for the trust policy (sagemaker.amazonaws.com) — all answered by
    the stack, through the env file's AWS_ENDPOINT_URL_STS/_IAM."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **read_env_file(stack.data_dir / "env")}

    result = subprocess.run(
        [sdk_v3_python, "-c", SDK_V3_ROLE_SCRIPT],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.split()[-1] == f"arn:aws:iam::{stack.account_id}:role/SageMakerRole"


def _aws_as(stack, credentials: dict, *arguments: str) -> dict:
    return aws(
        stack,
        *arguments,
        AWS_ACCESS_KEY_ID=credentials["AccessKeyId"],
        AWS_SECRET_ACCESS_KEY=credentials["SecretAccessKey"],
        AWS_SESSION_TOKEN=credentials["SessionToken"],
    )


def _aws_failing(stack, *arguments: str) -> str:
    """The CLI's error output for a call that must fail."""
    completed = subprocess.run(
        [str(AWS_CLI), *arguments, "--output", "json"],
        env=cli_environment(stack),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode != 0, completed.stdout
    return completed.stderr
