"""What a DescribeTrainingJob and a ListTrainingJobs cost the database, pinned: a read that starts
loading more (a query per transition, a metric lookup without definitions, the access key on every
request) shows here, not as a slower benchmark. Through boto3 and the Django app, in-process."""
from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.protocol.conftest import REGION, access_key, make_client  # noqa: F401  (fixtures)
from training import transitions
from training.models import TrainingJob

NAME = "pinned-queries"


@pytest.fixture
def sagemaker(make_client):  # noqa: F811
    client, _ = make_client()
    return client


@pytest.fixture
def job(access_key):  # noqa: F811
    """A job that went through a few statuses, in the key's account and the client's region."""
    created = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    job = TrainingJob.objects.create(
        account_id=access_key.account_id, region=REGION, training_job_name=NAME,
        training_job_arn=f"arn:aws:sagemaker:{REGION}:{access_key.account_id}:training-job/{NAME}",
        request={
            "TrainingJobName": NAME, "RoleArn": "arn:aws:iam::123456789012:role/r",
            "AlgorithmSpecification": {"TrainingImage": "img", "TrainingInputMode": "File"},
            "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 60},
        },
        creation_time=created, last_modified_time=created, next_check_at=created,
    )
    transitions.record_creation(job)
    for target in (transitions.DOWNLOADING, transitions.TRAINING):
        assert transitions.transition(job, target, message=f"now {target[1]}")
    return job


def test_describe_reads_the_job_and_its_history_in_two_queries(sagemaker, job, django_assert_num_queries):
    sagemaker.list_training_jobs()  # the first request of a key also reads the key (then cached)

    with django_assert_num_queries(2):
        described = sagemaker.describe_training_job(TrainingJobName=NAME)

    assert described["TrainingJobArn"] == job.training_job_arn
    assert described["CreationTime"] == datetime(2026, 1, 2, 3, 4, 5, tzinfo=described["CreationTime"].tzinfo)
    assert [row["Status"] for row in described["SecondaryStatusTransitions"]] == [
        "Starting", "Downloading", "Training"
    ]
    assert described["SecondaryStatusTransitions"][-1]["StatusMessage"] == "now Training"


def test_describe_of_a_missing_job_is_one_query_and_an_error(sagemaker, job, django_assert_num_queries):
    sagemaker.list_training_jobs()

    with django_assert_num_queries(1), pytest.raises(sagemaker.exceptions.ClientError, match="not found"):
        sagemaker.describe_training_job(TrainingJobName="no-such-job")


def test_a_list_page_is_one_query_whatever_the_number_of_jobs(sagemaker, job, django_assert_num_queries):
    for index in range(5):
        TrainingJob.objects.create(
            account_id=job.account_id, region=REGION, training_job_name=f"{NAME}-{index}",
            training_job_arn=f"{job.training_job_arn}-{index}", request=job.request,
            creation_time=job.creation_time + timedelta(seconds=index + 1),
            last_modified_time=job.creation_time, next_check_at=job.creation_time,
        )
    sagemaker.list_training_jobs()

    with django_assert_num_queries(1):
        listed = sagemaker.list_training_jobs(NameContains=NAME, MaxResults=4)

    assert [summary["TrainingJobName"] for summary in listed["TrainingJobSummaries"]] == [
        f"{NAME}-4", f"{NAME}-3", f"{NAME}-2", f"{NAME}-1"
    ]
    assert "NextToken" in listed


def test_list_filters_sorts_and_pages_with_each_requests_values(sagemaker, job, access_key):  # noqa: F811
    created = job.creation_time
    rows = [("Alpha-one", "Completed", 1), ("alpha-two", "Failed", 2), ("beta-one", "Completed", 3),
            ("ALPHA-three", "Completed", 4)]
    for name, status, minutes in rows:
        TrainingJob.objects.create(
            account_id=job.account_id, region=REGION, training_job_name=name,
            training_job_arn=f"{job.training_job_arn}-{name.lower()}", request=job.request,
            training_job_status=status, creation_time=created + timedelta(minutes=minutes),
            last_modified_time=created, next_check_at=created,
        )
    TrainingJob.objects.create(  # another account's job is never listed
        account_id="999988887777", region=REGION, training_job_name="alpha-elsewhere",
        training_job_arn="arn:aws:sagemaker:eu-west-1:999988887777:training-job/alpha-elsewhere",
        request=job.request, creation_time=created, last_modified_time=created, next_check_at=created,
    )

    def names(**params) -> list[str]:
        return [s["TrainingJobName"] for s in sagemaker.list_training_jobs(**params)["TrainingJobSummaries"]]

    assert names(NameContains="alpha") == ["ALPHA-three", "alpha-two", "Alpha-one"]
    assert names(NameContains="ONE", SortBy="Name", SortOrder="Ascending") == ["Alpha-one", "beta-one"]
    assert names(NameContains="alpha", StatusEquals="Completed") == ["ALPHA-three", "Alpha-one"]
    assert names(CreationTimeAfter=created + timedelta(minutes=1),
                 CreationTimeBefore=created + timedelta(minutes=4)) == ["beta-one", "alpha-two"]
    assert names(NameContains="gamma") == []
    assert names(WarmPoolStatusEquals="Available") == []
    pages = sagemaker.get_paginator("list_training_jobs").paginate(
        SortBy="CreationTime", SortOrder="Ascending", PaginationConfig={"PageSize": 2}
    )
    assert [[s["TrainingJobName"] for s in page["TrainingJobSummaries"]] for page in pages] == [
        [NAME, "Alpha-one"], ["alpha-two", "beta-one"], ["ALPHA-three"]
    ]
