"""The training-job API as boto3 sees it: errors, validation, listing, tags and accounts."""

import datetime
import time
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.e2e.conftest import shell_job, training_request, unique_name, wait_for_status


def error_of(call, **kwargs) -> dict:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response


def test_duplicate_training_job_name_is_resource_in_use(sagemaker, bucket, shell_algo_image):
    name = unique_name("dup")
    sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "true"))

    with pytest.raises(sagemaker.exceptions.ResourceInUse) as caught:
        sagemaker.create_training_job(**shell_job(name.upper(), shell_algo_image, bucket, "true"))

    assert "already exists" in caught.value.response["Error"]["Message"]


def test_describing_an_unknown_job_is_the_validation_error_the_waiter_expects(sagemaker):
    response = error_of(sagemaker.describe_training_job, TrainingJobName="never-created")
    assert response["Error"] == {"Code": "ValidationException", "Message": "Requested resource not found."}
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_malformed_request_lists_every_problem_and_creates_nothing(sagemaker, bucket, shell_algo_image):
    request = training_request("bad_name", shell_algo_image, bucket)
    request["ResourceConfig"]["InstanceCount"] = 1
    request["AlgorithmSpecification"]["TrainingInputMode"] = "Sideways"
    request["RoleArn"] = "not-a-role-arn-at-all"

    response = error_of(sagemaker.create_training_job, **request)

    assert response["Error"]["Code"] == "ValidationException"
    message = response["Error"]["Message"]
    assert message.startswith("3 validation errors detected: ")
    assert "Value 'bad_name' at 'trainingJobName' failed to satisfy constraint" in message
    assert "algorithmSpecification.trainingInputMode" in message and "enum value set" in message
    assert "'roleArn'" in message
    names = [
        job["TrainingJobName"]
        for job in sagemaker.list_training_jobs(NameContains="bad")["TrainingJobSummaries"]
    ]
    assert "bad_name" not in names


def test_missing_training_image_is_rejected_before_anything_runs(sagemaker, bucket):
    request = training_request(unique_name("noimage"), "x", bucket)
    del request["AlgorithmSpecification"]["TrainingImage"]

    response = error_of(sagemaker.create_training_job, **request)

    assert response["Error"]["Code"] == "ValidationException"
    assert "TrainingImage" in response["Error"]["Message"]
    described = error_of(sagemaker.describe_training_job, TrainingJobName=request["TrainingJobName"])
    assert described["Error"]["Code"] == "ValidationException"


@pytest.mark.parametrize("channel_name", [".", ".."])
def test_a_channel_name_that_cannot_be_a_directory_is_refused_and_nothing_is_created(
    sagemaker, bucket, shell_algo_image, channel_name
):
    name = unique_name("dot-channel")
    source = {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/train"}}
    channels = [{"ChannelName": channel_name, "DataSource": source}]
    request = shell_job(name, shell_algo_image, bucket, "true", InputDataConfig=channels)

    response = error_of(sagemaker.create_training_job, **request)

    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["Error"]["Code"] == "ValidationException"
    assert response["Error"]["Message"].startswith(
        f"Value '{channel_name}' at 'inputDataConfig.1.member.channelName' failed to satisfy constraint"
    )
    described = error_of(sagemaker.describe_training_job, TrainingJobName=name)
    assert described["Error"]["Message"] == "Requested resource not found."


def test_describe_returns_every_required_member_and_the_request_as_given(sagemaker, bucket, shell_algo_image):
    name = unique_name("shape")
    request = shell_job(name, shell_algo_image, bucket, "true", HyperParameters={"a": "1"})
    sagemaker.create_training_job(**request)

    job = sagemaker.describe_training_job(TrainingJobName=name)

    required = sagemaker.meta.service_model.operation_model(
        "DescribeTrainingJob"
    ).output_shape.required_members
    assert set(required) <= set(job)
    assert job["HyperParameters"] == {"a": "1"}
    assert job["RoleArn"] == request["RoleArn"]
    assert job["ResourceConfig"] == request["ResourceConfig"]
    assert job["StoppingCondition"] == {"MaxRuntimeInSeconds": 600}
    assert job["AlgorithmSpecification"]["TrainingImage"] == shell_algo_image
    assert isinstance(job["CreationTime"], datetime.datetime)
    wait_for_status(sagemaker, name)


def test_list_training_jobs_filters_sorts_and_paginates(sagemaker, bucket, shell_algo_image):
    marker = unique_name("page")
    names = [f"{marker}-{index}" for index in range(5)]
    before = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    for name in names:
        sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "true"))
        time.sleep(0.05)

    pages = list(
        sagemaker.get_paginator("list_training_jobs").paginate(
            NameContains=marker, SortBy="Name", SortOrder="Ascending", PaginationConfig={"PageSize": 2}
        )
    )

    assert [len(page["TrainingJobSummaries"]) for page in pages] == [2, 2, 1]
    assert "NextToken" not in pages[-1]
    listed = [summary["TrainingJobName"] for page in pages for summary in page["TrainingJobSummaries"]]
    assert listed == names
    # Newest first by default, as SageMaker answers (its doc says Ascending; shared/protocol.md).
    newest_first = sagemaker.list_training_jobs(NameContains=marker, CreationTimeAfter=before)
    assert [s["TrainingJobName"] for s in newest_first["TrainingJobSummaries"]] == names[::-1]
    assert (
        sagemaker.list_training_jobs(NameContains=marker, CreationTimeBefore=before)["TrainingJobSummaries"]
        == []
    )
    for name in names:
        wait_for_status(sagemaker, name)
    completed = sagemaker.list_training_jobs(NameContains=marker, StatusEquals="Completed")[
        "TrainingJobSummaries"
    ]
    assert len(completed) == 5
    assert (
        sagemaker.list_training_jobs(NameContains=marker, StatusEquals="Failed")["TrainingJobSummaries"] == []
    )


def test_tags_are_added_listed_and_deleted_by_arn(sagemaker, bucket, shell_algo_image):
    name = unique_name("tags")
    arn = sagemaker.create_training_job(
        **shell_job(name, shell_algo_image, bucket, "true", Tags=[{"Key": "team", "Value": "ml"}])
    )["TrainingJobArn"]

    added = sagemaker.add_tags(
        ResourceArn=arn, Tags=[{"Key": "team", "Value": "vision"}, {"Key": "env", "Value": "dev"}]
    )
    assert sorted(added["Tags"], key=lambda tag: tag["Key"]) == [
        {"Key": "env", "Value": "dev"},
        {"Key": "team", "Value": "vision"},
    ]
    differently_cased = arn.replace(f"/{name}", f"/{name.upper()}")
    sagemaker.delete_tags(ResourceArn=differently_cased, TagKeys=["env"])
    assert sagemaker.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "vision"}]

    reserved = error_of(sagemaker.add_tags, ResourceArn=arn, Tags=[{"Key": "aws:owner", "Value": "x"}])
    assert reserved["Error"]["Code"] == "ValidationException"
    unknown = error_of(sagemaker.list_tags, ResourceArn=arn.replace(name, "nothing-here"))
    assert unknown["Error"]["Code"] == "ValidationException"


def test_an_account_only_sees_its_own_training_jobs(stack, sagemaker, bucket, shell_algo_image):
    name = unique_name("mine")
    arn = sagemaker.create_training_job(**shell_job(name, shell_algo_image, bucket, "true"))["TrainingJobArn"]
    account = str(uuid.uuid4().int)[:12]  # an account no other test uses
    key_id, secret = stack.create_access_key(account)
    other = boto3.client(
        "sagemaker",
        endpoint_url=stack.endpoint_url,
        region_name=stack.region,
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
    )

    assert (
        error_of(other.describe_training_job, TrainingJobName=name)["Error"]["Code"] == "ValidationException"
    )
    assert name not in [
        s["TrainingJobName"] for s in other.list_training_jobs(NameContains=name)["TrainingJobSummaries"]
    ]
    assert error_of(other.list_tags, ResourceArn=arn)["Error"]["Code"] == "ValidationException"
    assert error_of(other.stop_training_job, TrainingJobName=name)["Error"]["Code"] == "ValidationException"
    their_bucket = f"theirs-{uuid.uuid4().hex[:12]}"  # its jobs write only to its own buckets
    their_s3 = stack.client("s3", aws_access_key_id=key_id, aws_secret_access_key=secret)
    their_s3.create_bucket(Bucket=their_bucket)
    their_role = f"arn:aws:iam::{account}:role/R"
    request = shell_job(name, shell_algo_image, their_bucket, "true", RoleArn=their_role)
    theirs = other.create_training_job(**request)["TrainingJobArn"]
    assert theirs == f"arn:aws:sagemaker:{stack.region}:{account}:training-job/{name}"
    wait_for_status(sagemaker, name)
    wait_for_status(other, name)


def client_with(stack, **overrides):
    settings = {
        "endpoint_url": stack.endpoint_url,
        "region_name": stack.region,
        "aws_access_key_id": stack.access_key_id,
        "aws_secret_access_key": stack.secret_access_key,
        "config": Config(retries={"max_attempts": 1}),
    }
    settings.update(overrides)
    return boto3.client("sagemaker", **settings)


def test_requests_with_bad_credentials_are_rejected_with_aws_error_codes(stack):
    wrong_secret = client_with(stack, aws_secret_access_key="x" * 40)
    unknown_key = client_with(stack, aws_access_key_id="AKIAUNKNOWNUNKNOWN00")
    unsigned = client_with(stack, config=Config(signature_version=__import__("botocore").UNSIGNED))

    bad_signature = error_of(wrong_secret.list_training_jobs)
    assert bad_signature["Error"]["Code"] == "InvalidSignatureException"
    assert bad_signature["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert error_of(unknown_key.list_training_jobs)["Error"]["Code"] == "UnrecognizedClientException"
    assert error_of(unsigned.list_training_jobs)["Error"]["Code"] == "MissingAuthenticationTokenException"


def test_unimplemented_operation_answers_a_clear_error_instead_of_a_fake_success(sagemaker):
    response = error_of(sagemaker.list_compilation_jobs)
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 501
    assert "ListCompilationJobs" in response["Error"]["Message"]
