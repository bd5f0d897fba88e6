"""IAM roles through botocore's own query-protocol client (signed for us-east-1, IAM's region).

AWS behaviour checked: the shapes of botocore's `iam` model (GetRoleResponse.Role, ListRoles'
Roles/IsTruncated/Marker); a role's ARN is `arn:aws:iam::<account>:role<path><name>` and its id
starts with `AROA` (IAM user guide, "IAM identifiers"); the trust policy comes back URL-encoded,
which botocore decodes into a dict (botocore handlers.json_decode_policies); the modeled errors
NoSuchEntity (404), EntityAlreadyExists (409), MalformedPolicyDocument (400), and
ValidationError for input that breaks the model's constraints; role names are unique regardless
of case (IAM user guide, "IAM object names")."""

import json
from urllib.parse import unquote

import pytest
from botocore.exceptions import ClientError

from accounts.accesskeys import create_access_key

ACCOUNT = "210987654321"
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


def _error(call) -> dict:
    with pytest.raises(ClientError) as raised:
        call()
    return raised.value.response


def test_get_role_of_a_name_nobody_created_answers_a_role_sagemaker_may_assume(iam):
    role = iam.get_role(RoleName="SageMakerRole")["Role"]

    assert role["Arn"] == f"arn:aws:iam::{ACCOUNT}:role/SageMakerRole"
    assert role["RoleName"] == "SageMakerRole" and role["Path"] == "/"
    assert role["RoleId"].startswith("AROA")
    assert role["AssumeRolePolicyDocument"] == TRUST
    assert role["MaxSessionDuration"] == 3600


def test_the_trust_policy_travels_url_encoded_as_iam_sends_it(make_client):
    iam, transport = make_client("iam")
    iam.get_role(RoleName="SageMakerRole")

    body = transport.responses[-1].content.decode()
    encoded = body.split("<AssumeRolePolicyDocument>")[1].split("</AssumeRolePolicyDocument>")[0]
    assert "{" not in encoded and json.loads(unquote(encoded)) == TRUST


def test_a_role_referenced_once_keeps_its_id(iam):
    first = iam.get_role(RoleName="SageMakerRole")["Role"]["RoleId"]

    assert iam.get_role(RoleName="SageMakerRole")["Role"]["RoleId"] == first


def test_create_role_records_the_clients_role(iam):
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
    }

    created = iam.create_role(
        RoleName="Pipeline",
        Path="/service-role/",
        AssumeRolePolicyDocument=json.dumps(policy),
        Description="pipelines",
        MaxSessionDuration=7200,
        Tags=[{"Key": "team", "Value": "ml"}],
    )["Role"]
    fetched = iam.get_role(RoleName="Pipeline")["Role"]

    assert created["Arn"] == f"arn:aws:iam::{ACCOUNT}:role/service-role/Pipeline"
    assert fetched["Arn"] == created["Arn"] and fetched["RoleId"] == created["RoleId"]
    assert fetched["AssumeRolePolicyDocument"] == policy
    assert fetched["Description"] == "pipelines"
    assert fetched["MaxSessionDuration"] == 7200
    assert fetched["Tags"] == [{"Key": "team", "Value": "ml"}]


def test_create_role_of_an_existing_name_is_refused_whatever_its_case(iam):
    iam.create_role(RoleName="Pipeline", AssumeRolePolicyDocument=json.dumps(TRUST))

    error = _error(lambda: iam.create_role(RoleName="PIPELINE", AssumeRolePolicyDocument=json.dumps(TRUST)))

    assert error["Error"]["Code"] == "EntityAlreadyExists"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert error["Error"]["Message"] == "Role with name PIPELINE already exists."


@pytest.mark.parametrize("document", ["{not json", "[]", '{"Version": "2012-10-17"}'])
def test_a_trust_policy_that_is_no_policy_is_refused(iam, document):
    error = _error(lambda: iam.create_role(RoleName="Broken", AssumeRolePolicyDocument=document))

    assert error["Error"]["Code"] == "MalformedPolicyDocument"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert _error(lambda: iam.delete_role(RoleName="Broken"))["Error"]["Code"] == "NoSuchEntity"


def test_a_role_name_outside_iams_pattern_is_a_validation_error(make_client):
    iam = make_client("iam", parameter_validation=False)[0]

    error = _error(lambda: iam.get_role(RoleName="no/slashes"))

    assert error["Error"]["Code"] == "ValidationError"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_list_roles_lists_the_accounts_roles_by_name_in_pages(iam):
    for name in ("b-role", "a-role", "c-role"):
        iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST))

    first = iam.list_roles(MaxItems=2)
    rest = iam.list_roles(MaxItems=2, Marker=first["Marker"])

    assert [role["RoleName"] for role in first["Roles"]] == ["a-role", "b-role"]
    assert first["IsTruncated"] is True
    assert [role["RoleName"] for role in rest["Roles"]] == ["c-role"]
    assert rest["IsTruncated"] is False and "Marker" not in rest


def test_list_roles_filters_on_the_path_prefix(iam):
    iam.create_role(RoleName="Plain", AssumeRolePolicyDocument=json.dumps(TRUST))
    iam.create_role(RoleName="Service", Path="/service-role/", AssumeRolePolicyDocument=json.dumps(TRUST))

    listed = iam.list_roles(PathPrefix="/service-role/")["Roles"]

    assert [role["RoleName"] for role in listed] == ["Service"]


def test_another_accounts_roles_are_invisible(iam, make_client):
    iam.create_role(RoleName="Mine", AssumeRolePolicyDocument=json.dumps(TRUST))
    other_key = create_access_key("111122223333")
    other = make_client("iam", key_id=other_key.access_key_id, secret=other_key.secret_access_key)[0]

    assert other.list_roles()["Roles"] == []
    assert other.get_role(RoleName="Mine")["Role"]["Arn"] == "arn:aws:iam::111122223333:role/Mine"
    assert iam.get_role(RoleName="Mine")["Role"]["Arn"] == f"arn:aws:iam::{ACCOUNT}:role/Mine"


def test_delete_role_removes_it(iam):
    iam.create_role(RoleName="Gone", AssumeRolePolicyDocument=json.dumps(TRUST))

    iam.delete_role(RoleName="Gone")

    assert iam.list_roles()["Roles"] == []
    error = _error(lambda: iam.delete_role(RoleName="Gone"))
    assert error["Error"]["Code"] == "NoSuchEntity"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert error["Error"]["Message"] == "The role with name Gone cannot be found."


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1"])
def test_iam_is_global_whatever_region_signed_the_request(make_client, region):
    """IAM is global: botocore signs it for us-east-1 against AWS's endpoint, and for the client's
    own region with an endpoint URL (its endpoint rules for iam); either way the account's roles
    are the same."""
    iam, transport = make_client("iam", region=region)

    role = iam.get_role(RoleName="SageMakerRole")["Role"]

    authorization = transport.responses[-1].wsgi_request.META["HTTP_AUTHORIZATION"]
    assert f"/{region}/iam/aws4_request" in authorization
    assert role["Arn"] == f"arn:aws:iam::{ACCOUNT}:role/SageMakerRole"
    assert [listed["RoleName"] for listed in iam.list_roles()["Roles"]] == ["SageMakerRole"]


def test_an_iam_operation_sageport_does_not_serve_is_not_implemented(iam):
    error = _error(iam.list_users)

    assert error["Error"]["Code"] == "NotImplemented"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 501


def test_simulate_principal_policy_allows_every_action_to_a_role_of_the_account(iam):
    """What the SageMaker SDK v3 asks before ModelTrainer.train (paginated, as its
    `_simulate_denied_actions` reads it): Sageport enforces no IAM permissions, so all allowed."""
    actions = ["sagemaker:CreateTrainingJob", "s3:GetObject", "logs:PutLogEvents"]
    pages = iam.get_paginator("simulate_principal_policy").paginate(
        PolicySourceArn=f"arn:aws:iam::{ACCOUNT}:role/SageMakerRole",
        ActionNames=actions,
        PaginationConfig={"PageSize": 2},
    )

    results = [result for page in pages for result in page["EvaluationResults"]]

    assert [result["EvalActionName"] for result in results] == actions
    assert {result["EvalDecision"] for result in results} == {"allowed"}
    assert {result["EvalResourceName"] for result in results} == {"*"}


def test_simulating_another_accounts_principal_is_no_such_entity(iam):
    error = _error(
        lambda: iam.simulate_principal_policy(
            PolicySourceArn="arn:aws:iam::111122223333:role/SageMakerRole", ActionNames=["s3:GetObject"]
        )
    )

    assert error["Error"]["Code"] == "NoSuchEntity"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 404
