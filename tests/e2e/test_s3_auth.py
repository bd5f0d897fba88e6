"""S3 authentication of the bundled store: only Sageport's keys work, each account reaches only
its own buckets (named `<account>-…`, and its SageMaker default bucket), a deleted key stops
working, and the platform's key still writes artifacts into every account's buckets."""
import time
import uuid

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status

SYNC_TIMEOUT_SECONDS = 20  # a key change reaches the store on commit; this bounds the polling
NO_RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"})


def new_account() -> str:
    return str(uuid.uuid4().int)[:12]  # an account no other test uses


def error_code(call, **kwargs) -> str:
    with pytest.raises(ClientError) as raised:
        call(**kwargs)
    return raised.value.response["Error"]["Code"]


def s3_of(stack, key_id: str, secret: str):
    return stack.client("s3", aws_access_key_id=key_id, aws_secret_access_key=secret, config=NO_RETRIES)


def answers_with(s3) -> str:
    """What the store says to this key: "OK" or the error code."""
    try:
        s3.list_buckets()
    except ClientError as error:
        return error.response["Error"]["Code"]
    return "OK"


def wait_until(s3, wanted: str) -> None:
    deadline = time.monotonic() + SYNC_TIMEOUT_SECONDS
    while (answer := answers_with(s3)) != wanted:
        assert time.monotonic() < deadline, f"the store still answers {answer}, not {wanted}"
        time.sleep(0.1)


@pytest.fixture
def account_key(stack):
    """A new account's key, once the store accepts it: (account id, S3 client)."""
    account = new_account()
    key_id, secret = stack.create_access_key(account)
    s3 = s3_of(stack, key_id, secret)
    wait_until(s3, "OK")
    return account, s3


def test_a_key_sageport_does_not_know_is_refused(stack):
    stranger = s3_of(stack, "AKIAUNKNOWNKEY000000", "not-a-secret")

    assert answers_with(stranger) == "InvalidAccessKeyId"
    assert error_code(stranger.create_bucket, Bucket=f"{stack.account_id}-stranger") == "InvalidAccessKeyId"


def test_an_account_creates_and_uses_buckets_of_its_namespace_only(account_key):
    account, s3 = account_key
    bucket = f"{account}-data"

    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="train/part-0.csv", Body=b"1,2\n")

    assert s3.get_object(Bucket=bucket, Key="train/part-0.csv")["Body"].read() == b"1,2\n"
    assert [item["Key"] for item in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["train/part-0.csv"]
    assert bucket in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert error_code(s3.create_bucket, Bucket=f"outside-{uuid.uuid4().hex[:12]}") == "AccessDenied"


def test_another_accounts_key_is_denied_its_buckets_and_objects(stack, account_key):
    account, owner = account_key
    bucket = f"{account}-private"
    owner.create_bucket(Bucket=bucket)
    owner.put_object(Bucket=bucket, Key="secret.txt", Body=b"mine")
    other_id, other_secret = stack.create_access_key(new_account())
    other = s3_of(stack, other_id, other_secret)
    wait_until(other, "OK")

    assert error_code(other.get_object, Bucket=bucket, Key="secret.txt") == "AccessDenied"
    assert error_code(other.head_object, Bucket=bucket, Key="secret.txt") == "403"
    assert error_code(other.list_objects_v2, Bucket=bucket) == "AccessDenied"
    assert error_code(other.put_object, Bucket=bucket, Key="planted", Body=b"x") == "AccessDenied"
    assert error_code(other.delete_object, Bucket=bucket, Key="secret.txt") == "AccessDenied"
    assert error_code(other.create_bucket, Bucket=f"{account}-squatted") == "AccessDenied"
    assert bucket not in [b["Name"] for b in other.list_buckets()["Buckets"]]
    assert owner.get_object(Bucket=bucket, Key="secret.txt")["Body"].read() == b"mine"


def test_the_sdks_default_bucket_belongs_to_its_account(stack, account_key):
    default_bucket = f"sagemaker-{stack.region}-{stack.account_id}"
    _, other = account_key
    s3 = stack.client("s3")

    s3.put_object(Bucket=default_bucket, Key="sdk/upload.txt", Body=b"sdk")

    assert s3.get_object(Bucket=default_bucket, Key="sdk/upload.txt")["Body"].read() == b"sdk"
    assert error_code(other.get_object, Bucket=default_bucket, Key="sdk/upload.txt") == "AccessDenied"
    assert error_code(other.put_object, Bucket=default_bucket, Key="x", Body=b"x") == "AccessDenied"


def test_a_key_deleted_in_sageport_stops_working_on_s3(stack):
    account = new_account()
    key_id, secret = stack.create_access_key(account)
    s3 = s3_of(stack, key_id, secret)
    wait_until(s3, "OK")
    s3.create_bucket(Bucket=f"{account}-before")

    stack.delete_access_key(key_id)

    wait_until(s3, "InvalidAccessKeyId")
    assert error_code(s3.put_object, Bucket=f"{account}-before", Key="x", Body=b"x") == "InvalidAccessKeyId"


def test_the_worker_uploads_artifacts_into_the_buckets_of_any_account(stack, shell_algo_image, account_key):
    account, s3 = account_key
    bucket = f"{account}-models"
    s3.create_bucket(Bucket=bucket)
    key_id, secret = stack.create_access_key(account)  # its SageMaker client: another key of it
    sagemaker = stack.client("sagemaker", aws_access_key_id=key_id, aws_secret_access_key=secret)
    name = unique_name("s3auth")
    request = shell_job(name, shell_algo_image, bucket, "echo trained > /opt/ml/model/weights.txt")
    request["RoleArn"] = f"arn:aws:iam::{account}:role/SageMakerRole"

    sagemaker.create_training_job(**request)
    job = wait_for_status(sagemaker, name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    key = f"output/{name}/output/model.tar.gz"
    assert read_tar_gz(s3, bucket, key) == {"weights.txt": b"trained\n"}
