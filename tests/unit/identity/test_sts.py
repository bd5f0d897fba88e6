"""STS through botocore's own query-protocol client: GetCallerIdentity and AssumeRole, whose
temporary credentials the rest of the API accepts with their session token only.

AWS behaviour checked: the output shapes of botocore's `sts` model (GetCallerIdentityResponse:
UserId, Account, Arn; AssumeRoleResponse: Credentials, AssumedRoleUser); an assumed role's ARN is
`arn:aws:sts::<account>:assumed-role/<role>/<session>` and its UserId `<role id>:<session>`
(STS API reference, GetCallerIdentity examples); temporary key ids start with `ASIA` (IAM user
guide, "Understanding unique ID prefixes"); DurationSeconds is 900..43200 and defaults to 3600,
and may not exceed the role's MaxSessionDuration (AssumeRole API reference); a role the caller may
not assume answers AccessDenied "User: <arn> is not authorized to perform: sts:AssumeRole on
resource: <role arn>" (403)."""

import json
from datetime import timedelta

import pytest
from botocore import UNSIGNED
from botocore.exceptions import ClientError
from django.utils import timezone

from accounts import accesskeys
from accounts.models import AccessKey

ACCOUNT = "210987654321"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/TrainingRole"


def _error(call) -> dict:
    with pytest.raises(ClientError) as raised:
        call()
    return raised.value.response


def _client_of(make_client, credentials: dict, service: str = "sts", *, with_token: bool = True):
    return make_client(
        service,
        key_id=credentials["AccessKeyId"],
        secret=credentials["SecretAccessKey"],
        session_token=credentials["SessionToken"] if with_token else None,
    )[0]


def test_get_caller_identity_names_the_keys_account_and_its_execution_role_session(sts):
    identity = sts.get_caller_identity()

    assert identity["Account"] == ACCOUNT
    assert identity["Arn"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/SageMakerRole/SageMaker"
    role_id, _, session = identity["UserId"].partition(":")
    assert role_id.startswith("AROA") and session == "SageMaker"


def test_assume_role_answers_temporary_credentials_of_the_role(sts):
    before = timezone.now()
    answer = sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="nightly-run")

    credentials = answer["Credentials"]
    assert credentials["AccessKeyId"].startswith("ASIA")
    assert credentials["SecretAccessKey"] and credentials["SessionToken"]
    lifetime = credentials["Expiration"] - before
    assert timedelta(seconds=3590) < lifetime <= timedelta(seconds=3601)  # the default hour
    assert answer["AssumedRoleUser"]["Arn"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/TrainingRole/nightly-run"
    assert answer["AssumedRoleUser"]["AssumedRoleId"].endswith(":nightly-run")


def test_the_temporary_credentials_are_who_assume_role_said(sts, make_client):
    answer = sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="nightly-run")

    identity = _client_of(make_client, answer["Credentials"]).get_caller_identity()

    assert identity["Arn"] == answer["AssumedRoleUser"]["Arn"]
    assert identity["UserId"] == answer["AssumedRoleUser"]["AssumedRoleId"]
    assert identity["Account"] == ACCOUNT


def test_the_temporary_credentials_call_sagemaker_in_the_roles_account(sts, make_client):
    credentials = sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="run")["Credentials"]

    sagemaker = _client_of(make_client, credentials, "sagemaker")

    assert sagemaker.list_training_jobs()["TrainingJobSummaries"] == []


def test_temporary_credentials_without_their_session_token_are_refused(sts, make_client):
    """AWS: a temporary key signed without its token is an invalid security token."""
    credentials = sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="run")["Credentials"]

    error = _error(_client_of(make_client, credentials, with_token=False).get_caller_identity)

    assert error["Error"]["Code"] == "InvalidClientTokenId"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_expired_temporary_credentials_are_refused_with_expired_token(sts, make_client, monkeypatch):
    credentials = sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="run", DurationSeconds=900)["Credentials"]
    later = timezone.now() + timedelta(seconds=901)
    monkeypatch.setattr(accesskeys.timezone, "now", lambda: later)

    error = _error(_client_of(make_client, credentials, "sagemaker").list_training_jobs)

    assert error["Error"]["Code"] == "ExpiredTokenException"
    assert error["Error"]["Message"] == "The security token included in the request is expired"


def test_duration_seconds_sets_the_lifetime_up_to_the_roles_maximum(sts, iam):
    iam.create_role(RoleName="LongRole", AssumeRolePolicyDocument=_TRUST, MaxSessionDuration=43200)
    before = timezone.now()

    credentials = sts.assume_role(
        RoleArn=f"arn:aws:iam::{ACCOUNT}:role/LongRole", RoleSessionName="run", DurationSeconds=43200
    )["Credentials"]

    assert credentials["Expiration"] - before > timedelta(hours=11, minutes=59)
    key = AccessKey.objects.get(access_key_id=credentials["AccessKeyId"])
    assert key.account_id == ACCOUNT


def test_a_duration_beyond_the_roles_maximum_is_refused(sts):
    error = _error(lambda: sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="run", DurationSeconds=7200))

    assert error["Error"]["Code"] == "ValidationError"
    assert "MaxSessionDuration" in error["Error"]["Message"]


@pytest.mark.parametrize("seconds", [899, 43201])
def test_a_duration_outside_stss_bounds_is_a_validation_error(make_client, seconds):
    sts = make_client("sts", parameter_validation=False)[0]

    error = _error(lambda: sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="run", DurationSeconds=seconds))

    assert error["Error"]["Code"] == "ValidationError"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "durationSeconds" in error["Error"]["Message"]


def test_another_accounts_role_is_refused_as_sts_refuses_it(sts):
    other = "arn:aws:iam::111122223333:role/TrainingRole"

    error = _error(lambda: sts.assume_role(RoleArn=other, RoleSessionName="run"))

    assert error["Error"]["Code"] == "AccessDenied"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert error["Error"]["Message"] == (
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/SageMakerRole/SageMaker is not authorized to "
        f"perform: sts:AssumeRole on resource: {other}"
    )
    assert not AccessKey.objects.filter(access_key_id__startswith="ASIA").exists()


@pytest.mark.parametrize(
    "arn",
    [
        f"arn:aws:iam::{ACCOUNT}:user/TrainingRole",
        f"arn:aws:s3:::{ACCOUNT}-bucket/role/x",
        f"arn:aws:iam:{ACCOUNT}:role/TrainingRole",  # one colon short: an ARN of no account
    ],
)
def test_an_arn_that_is_no_role_of_the_account_is_refused(sts, arn):
    error = _error(lambda: sts.assume_role(RoleArn=arn, RoleSessionName="run"))

    assert error["Error"]["Code"] == "AccessDenied"


def test_a_role_arn_that_is_no_arn_is_a_validation_error(sts):
    error = _error(lambda: sts.assume_role(RoleArn="TrainingRole-not-an-arn", RoleSessionName="run"))

    assert error["Error"]["Code"] == "ValidationError"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_a_session_name_outside_its_pattern_is_a_validation_error(make_client):
    sts = make_client("sts", parameter_validation=False)[0]

    error = _error(lambda: sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="has space"))

    assert error["Error"]["Code"] == "ValidationError"
    assert "roleSessionName" in error["Error"]["Message"]


def test_a_role_under_a_path_is_assumed_by_its_full_arn_only(sts, iam):
    iam.create_role(RoleName="PathRole", Path="/service-role/", AssumeRolePolicyDocument=_TRUST)

    full, bare = f"arn:aws:iam::{ACCOUNT}:role/service-role/PathRole", f"arn:aws:iam::{ACCOUNT}:role/PathRole"

    answer = sts.assume_role(RoleArn=full, RoleSessionName="run")
    error = _error(lambda: sts.assume_role(RoleArn=bare, RoleSessionName="run"))

    # The session's ARN names the role without its path (STS API reference, AssumedRoleUser).
    assert answer["AssumedRoleUser"]["Arn"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/PathRole/run"
    assert error["Error"]["Code"] == "AccessDenied"


def test_an_unsigned_request_is_refused(make_client):
    sts = make_client("sts", signature_version=UNSIGNED)[0]

    error = _error(sts.get_caller_identity)

    assert error["Error"]["Code"] == "MissingAuthenticationToken"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 403


_TRUST = json.dumps(
    {
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ]
    }
)


def test_role_chaining_is_limited_to_an_hour(sts, iam, make_client):
    """Credentials from AssumeRole assuming a role again: at most one hour, whatever the role's
    MaxSessionDuration (IAM user guide, "Role chaining")."""
    iam.create_role(RoleName="LongRole", AssumeRolePolicyDocument=_TRUST, MaxSessionDuration=43200)
    long_role = f"arn:aws:iam::{ACCOUNT}:role/LongRole"
    chained = _client_of(
        make_client, sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="first")["Credentials"]
    )

    error = _error(
        lambda: chained.assume_role(RoleArn=long_role, RoleSessionName="second", DurationSeconds=7200)
    )
    within = chained.assume_role(RoleArn=long_role, RoleSessionName="second", DurationSeconds=3600)

    assert error["Error"]["Code"] == "ValidationError"
    assert "role chaining" in error["Error"]["Message"]
    assert within["AssumedRoleUser"]["Arn"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/LongRole/second"
