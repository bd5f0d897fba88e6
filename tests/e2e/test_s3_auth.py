"""S3 through the gateway: only Sageport's keys work, a bucket belongs to the account that
created it (any name, as on S3), another account's key is denied it everywhere (objects, listing,
copies, re-creating it), a deleted key stops working, presigned URLs work until they expire, and
the platform's key still writes artifacts into every account's buckets."""

import time
import uuid

import pytest
import urllib3
from botocore.config import Config
from botocore.exceptions import ClientError
from django.conf import settings

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status

KEY_CHANGE_TIMEOUT_SECONDS = 20  # a revoked key may stay cached for SAGEPORT_ACCESS_KEY_CACHE_SECONDS
PRESIGNED_EXPIRY_TIMEOUT_SECONDS = 10
NO_RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"})
http = urllib3.PoolManager(retries=False, timeout=10)


def new_account() -> str:
    return str(uuid.uuid4().int)[:12]  # an account no other test uses


def any_name(prefix: str = "my-data") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"  # a free-form name, no account in it


def error_code(call, **kwargs) -> str:
    with pytest.raises(ClientError) as raised:
        call(**kwargs)
    return raised.value.response["Error"]["Code"]


def s3_of(stack, key_id: str, secret: str, **config):
    return stack.client(
        "s3",
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=NO_RETRIES.merge(Config(**config)),
    )


def new_account_client(stack):
    account = new_account()
    return account, s3_of(stack, *stack.create_access_key(account))


def answers_with(s3) -> str:
    try:
        s3.list_buckets()
    except ClientError as error:
        return error.response["Error"]["Code"]
    return "OK"


def test_a_key_sageport_does_not_know_is_refused(stack):
    stranger = s3_of(stack, "AKIAUNKNOWNKEY000000", "not-a-secret")

    assert answers_with(stranger) == "InvalidAccessKeyId"
    assert error_code(stranger.create_bucket, Bucket=any_name()) == "InvalidAccessKeyId"


def test_a_wrong_secret_gets_signature_does_not_match_as_s3_xml(stack):
    key_id, _ = stack.create_access_key(new_account())
    forger = s3_of(stack, key_id, "a-wrong-secret")

    with pytest.raises(ClientError) as raised:
        forger.list_buckets()

    error = raised.value.response
    assert error["Error"]["Code"] == "SignatureDoesNotMatch"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 403
    raw = http.request("GET", f"{stack.s3_endpoint_url}/")  # unsigned: anonymous access is refused
    assert raw.status == 403
    assert raw.data.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>')


def test_the_platform_key_does_not_sign_with_a_public_default_secret(stack):
    """Every container that is not isolated reaches the gateway, where the platform key reaches
    every bucket: its secret is the installation's own, never the old public default."""
    guesser = s3_of(stack, settings.SAGEPORT_S3_ACCESS_KEY_ID, "sageport-secret")

    assert answers_with(guesser) == "SignatureDoesNotMatch"
    platform = s3_of(stack, settings.SAGEPORT_S3_ACCESS_KEY_ID, settings.SAGEPORT_S3_SECRET_ACCESS_KEY)
    assert answers_with(platform) == "OK"


def test_an_account_creates_and_uses_a_bucket_of_any_name(stack):
    _, s3 = new_account_client(stack)
    bucket = any_name()

    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="train/part-0.csv", Body=b"1,2\n")

    assert s3.get_object(Bucket=bucket, Key="train/part-0.csv")["Body"].read() == b"1,2\n"
    assert [item["Key"] for item in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["train/part-0.csv"]
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == [bucket]
    s3.create_bucket(Bucket=bucket)  # us-east-1: re-creating one's own bucket succeeds, as on S3


def test_another_accounts_key_is_denied_its_bucket_everywhere(stack):
    _, owner = new_account_client(stack)
    _, other = new_account_client(stack)
    bucket, others_bucket = any_name(), any_name("other")
    owner.create_bucket(Bucket=bucket)
    owner.put_object(Bucket=bucket, Key="secret.txt", Body=b"mine")
    other.create_bucket(Bucket=others_bucket)

    assert error_code(other.get_object, Bucket=bucket, Key="secret.txt") == "AccessDenied"
    assert error_code(other.head_object, Bucket=bucket, Key="secret.txt") == "403"
    assert error_code(other.list_objects_v2, Bucket=bucket) == "AccessDenied"
    assert error_code(other.put_object, Bucket=bucket, Key="planted", Body=b"x") == "AccessDenied"
    assert error_code(other.delete_object, Bucket=bucket, Key="secret.txt") == "AccessDenied"
    assert error_code(other.delete_bucket, Bucket=bucket) == "AccessDenied"
    assert (
        error_code(
            other.copy_object,
            Bucket=others_bucket,
            Key="stolen",
            CopySource={"Bucket": bucket, "Key": "secret.txt"},
        )
        == "AccessDenied"
    )
    assert error_code(other.create_bucket, Bucket=bucket) == "BucketAlreadyExists"
    assert bucket not in [b["Name"] for b in other.list_buckets()["Buckets"]]
    assert owner.get_object(Bucket=bucket, Key="secret.txt")["Body"].read() == b"mine"
    assert error_code(other.list_objects_v2, Bucket=any_name("missing")) == "NoSuchBucket"


def test_a_deleted_bucket_name_is_free_for_another_account(stack):
    _, first = new_account_client(stack)
    _, second = new_account_client(stack)
    bucket = any_name()
    first.create_bucket(Bucket=bucket)

    first.delete_bucket(Bucket=bucket)
    second.create_bucket(Bucket=bucket)

    second.put_object(Bucket=bucket, Key="k", Body=b"second's")
    assert error_code(first.get_object, Bucket=bucket, Key="k") == "AccessDenied"


def test_platform_buckets_are_the_platforms_only(stack, s3_client):
    bucket = any_name("platform")
    s3_client.create_bucket(Bucket=bucket)
    _, tenant = new_account_client(stack)

    assert error_code(tenant.list_objects_v2, Bucket=bucket) == "AccessDenied"
    assert error_code(tenant.create_bucket, Bucket=bucket) == "BucketAlreadyExists"


def test_the_sdks_default_bucket_belongs_to_its_account(stack):
    default_bucket = f"sagemaker-{stack.region}-{stack.account_id}"
    _, other = new_account_client(stack)
    s3 = stack.client("s3")

    s3.put_object(Bucket=default_bucket, Key="sdk/upload.txt", Body=b"sdk")

    assert s3.get_object(Bucket=default_bucket, Key="sdk/upload.txt")["Body"].read() == b"sdk"
    assert error_code(other.get_object, Bucket=default_bucket, Key="sdk/upload.txt") == "AccessDenied"
    assert error_code(other.put_object, Bucket=default_bucket, Key="x", Body=b"x") == "AccessDenied"


@pytest.mark.parametrize("signature_version", [None, "s3v4"])  # boto3's default is SigV2 here
def test_a_presigned_get_url_works_until_it_expires(stack, signature_version):
    account = new_account()
    s3 = s3_of(stack, *stack.create_access_key(account), signature_version=signature_version)
    bucket = any_name()
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="shared.txt", Body=b"shared")
    params = {"Bucket": bucket, "Key": "shared.txt"}

    url = s3.generate_presigned_url("get_object", Params=params, ExpiresIn=600)
    short_lived = s3.generate_presigned_url("get_object", Params=params, ExpiresIn=1)

    assert http.request("GET", url).data == b"shared"
    tampered = url.replace("shared.txt", "other.txt")
    assert b"<Code>SignatureDoesNotMatch</Code>" in http.request("GET", tampered).data
    deadline = time.monotonic() + PRESIGNED_EXPIRY_TIMEOUT_SECONDS
    while (answer := http.request("GET", short_lived)).status == 200:
        assert time.monotonic() < deadline, "a presigned URL valid for 1 s still works"
        time.sleep(0.2)
    assert answer.status == 403
    assert b"<Code>AccessDenied</Code><Message>Request has expired</Message>" in answer.data


def test_a_key_deleted_in_sageport_stops_working_on_s3(stack):
    account = new_account()
    key_id, secret = stack.create_access_key(account)
    s3 = s3_of(stack, key_id, secret)
    bucket = any_name()
    s3.create_bucket(Bucket=bucket)

    stack.delete_access_key(key_id)

    deadline = time.monotonic() + KEY_CHANGE_TIMEOUT_SECONDS
    while (answer := answers_with(s3)) != "InvalidAccessKeyId":
        assert time.monotonic() < deadline, f"the gateway still answers {answer}"
        time.sleep(0.2)
    assert error_code(s3.put_object, Bucket=bucket, Key="x", Body=b"x") == "InvalidAccessKeyId"


def test_the_worker_uploads_artifacts_into_the_buckets_of_any_account(stack, shell_algo_image):
    account, s3 = new_account_client(stack)
    bucket = any_name("models")
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


def test_gateway_requests_are_counted_in_the_stacks_metrics(stack):
    _, s3 = new_account_client(stack)
    s3.create_bucket(Bucket=any_name())

    metrics = http.request("GET", f"{stack.endpoint_url}/metrics").data.decode()

    assert 'sageport_s3_gateway_request_seconds_count{method="PUT",status="200"}' in metrics
