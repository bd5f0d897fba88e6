"""Two accounts and the platform between them: account B's jobs, models and endpoints cannot name
account A's buckets, so the worker (which reads and writes S3 with the platform's key) never
moves A's data for B. Every try is refused at create, nothing is created for B, and A's objects
are unchanged."""

import uuid

import pytest
from botocore.exceptions import ClientError

from tests.e2e.conftest import read_tar_gz, shell_job, unique_name, wait_for_status

TRAIN = "train/data.csv"
MODEL = "model/model.tar.gz"
CHECKPOINT = "checkpoints/step-1.pt"
CODE = "code/sourcedir.tar.gz"


class Account:
    def __init__(self, stack, prefix: str):
        self.id = str(uuid.uuid4().int)[:12]  # an account no other test uses
        key_id, secret = stack.create_access_key(self.id)
        keys = {"aws_access_key_id": key_id, "aws_secret_access_key": secret}
        self.s3 = stack.client("s3", **keys)
        self.sagemaker = stack.client("sagemaker", **keys)
        self.role = f"arn:aws:iam::{self.id}:role/SageMakerRole"
        self.bucket = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self.s3.create_bucket(Bucket=self.bucket)


@pytest.fixture(scope="module")
def alice(stack):
    """Account A, with data, a model, checkpoints and code in its bucket."""
    account = Account(stack, "alice")
    for key in (TRAIN, MODEL, CHECKPOINT, CODE):
        account.s3.put_object(Bucket=account.bucket, Key=key, Body=f"alice's {key}".encode())
    return account


@pytest.fixture(scope="module")
def bob(stack):
    return Account(stack, "bob")


def gateway_requests_on(stack, bucket: str) -> list[str]:
    """The S3 gateway's access-log lines (SAGEPORT_S3_ACCESS_LOG) about `bucket`."""
    log = stack.supervisor.log_path("s3gateway")
    files = sorted(log.parent.glob(f"{log.name}*"))  # with its rotated copies
    lines = [line for path in files for line in path.read_text().splitlines()]
    return [line for line in lines if f" /{bucket}" in line]


def objects_of(account: Account) -> dict:
    listing = account.s3.list_objects_v2(Bucket=account.bucket)["Contents"]
    return {item["Key"]: (item["ETag"], item["LastModified"]) for item in listing}


def refusal(call, **request) -> dict:
    with pytest.raises(ClientError) as raised:
        call(**request)
    return raised.value.response["Error"]


def bobs_job(bob: Account, image: str, **overrides) -> dict:
    return shell_job(unique_name("tenancy"), image, bob.bucket, "true", RoleArn=bob.role, **overrides)


def channel(uri: str) -> list[dict]:
    source = {"S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}
    return [{"ChannelName": "train", "DataSource": {"S3DataSource": source}}]


def test_bobs_job_cannot_read_alices_training_data(alice, bob, shell_algo_image):
    before = objects_of(alice)
    request = bobs_job(bob, shell_algo_image, InputDataConfig=channel(f"s3://{alice.bucket}/train/"))

    error = refusal(bob.sagemaker.create_training_job, **request)

    assert error["Code"] == "ValidationException"
    assert error["Message"].startswith(f'No S3 objects found under S3 URL "s3://{alice.bucket}/train/"')
    assert f'the role "{bob.role}" has "s3:ListBucket" permissions' in error["Message"]
    assert refusal(bob.sagemaker.describe_training_job, TrainingJobName=request["TrainingJobName"])[
        "Message"] == "Requested resource not found."
    assert objects_of(alice) == before


@pytest.mark.parametrize("member, value", [
    ("OutputDataConfig", lambda bucket: {"S3OutputPath": f"s3://{bucket}/bobs-artifacts"}),
    ("CheckpointConfig", lambda bucket: {"S3Uri": f"s3://{bucket}/checkpoints/"}),
    ("HyperParameters", lambda bucket: {"sagemaker_submit_directory": f'"s3://{bucket}/{CODE}"'}),
    ("TensorBoardOutputConfig", lambda bucket: {"S3OutputPath": f"s3://{bucket}/tb"}),
])
def test_bobs_job_cannot_write_alices_bucket_nor_take_her_checkpoints_or_code(
    alice, bob, shell_algo_image, member, value
):
    before = objects_of(alice)
    request = bobs_job(bob, shell_algo_image, **{member: value(alice.bucket)})

    error = refusal(bob.sagemaker.create_training_job, **request)

    assert error["Code"] == "ValidationException"
    assert alice.bucket in error["Message"] and member in error["Message"]
    assert request["TrainingJobName"] not in [
        job["TrainingJobName"] for job in bob.sagemaker.list_training_jobs()["TrainingJobSummaries"]
    ]
    assert objects_of(alice) == before


def test_bobs_model_cannot_serve_alices_model_data(alice, bob):
    before = objects_of(alice)
    name = unique_name("tenancy-model")
    uri = f"s3://{alice.bucket}/{MODEL}"

    error = refusal(
        bob.sagemaker.create_model,
        ModelName=name,
        ExecutionRoleArn=bob.role,
        PrimaryContainer={"Image": "sageport-examples/busybox:latest", "ModelDataUrl": uri},
    )

    assert error["Code"] == "ValidationException"
    assert error["Message"].startswith(f"Could not access model data at {uri}. Please ensure that the role")
    assert bob.sagemaker.list_models(NameContains=name)["Models"] == []
    assert objects_of(alice) == before


def test_bob_cannot_pass_alices_role(alice, bob, shell_algo_image):
    request = bobs_job(bob, shell_algo_image)
    request["RoleArn"] = alice.role

    error = refusal(bob.sagemaker.create_training_job, **request)

    assert error["Code"] == "AccessDeniedException"
    assert error["Message"] == "Cross-account pass role is not allowed."


def test_bobs_own_bucket_works_for_his_jobs_end_to_end(stack, bob, shell_algo_image):
    """His own bucket works end to end: the rule refuses others' buckets, not his."""
    request = bobs_job(bob, shell_algo_image)
    request["Environment"] = {"ALGO_SCRIPT": "cp /opt/ml/input/data/train/* /opt/ml/model/"}
    bob.s3.put_object(Bucket=bob.bucket, Key="train/mine.csv", Body=b"bob's data")
    request["InputDataConfig"] = channel(f"s3://{bob.bucket}/train/")

    bob.sagemaker.create_training_job(**request)
    job = wait_for_status(bob.sagemaker, request["TrainingJobName"])

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    key = f"output/{request['TrainingJobName']}/output/model.tar.gz"
    assert read_tar_gz(bob.s3, bob.bucket, key) == {"mine.csv": b"bob's data"}


def test_the_gateways_access_log_shows_only_alice_ever_touched_her_bucket(
    stack, alice, bob, shell_algo_image
):
    """Every refused try above left her bucket unread: no request of the platform's worker, nor of
    Bob, ever reached it; only her own uploads and listings did."""
    refusal(bob.sagemaker.create_training_job, **bobs_job(
        bob, shell_algo_image, InputDataConfig=channel(f"s3://{alice.bucket}/train/")))
    lines = gateway_requests_on(stack, alice.bucket)
    assert lines, "the access log names no request on her bucket at all"
    assert all(f"caller={alice.id} " in line for line in lines), [
        line for line in lines if f"caller={alice.id} " not in line
    ]
