"""`Search` with Resource `TrainingJob` through boto3 and the Django app: the caller's jobs as
DescribeTrainingJob shows them with their tags, filtered on what the SDK and people filter on
(status, a tag, a hyperparameter, a final metric), sorted by it; another account's jobs never."""
from datetime import UTC, datetime

import pytest

from tests.unit.protocol.conftest import REGION, access_key, make_client  # noqa: F401  (fixtures)
from training.metrics import TrainingMetrics
from training.models import TrainingJob

OTHER_ACCOUNT = "111122223333"


@pytest.fixture
def sagemaker(make_client):  # noqa: F811
    client, _ = make_client()
    return client


def job(account_id: str, name: str, status: str, depth: str, loss: float | None, tags=()) -> TrainingJob:
    created = datetime(2026, 1, 2, 3, 4, int(depth), tzinfo=UTC)
    created_job = TrainingJob.objects.create(
        account_id=account_id, region=REGION, training_job_name=name, training_job_status=status,
        training_job_arn=f"arn:aws:sagemaker:{REGION}:{account_id}:training-job/{name}",
        request={
            "TrainingJobName": name, "RoleArn": "arn:aws:iam::123456789012:role/r",
            "AlgorithmSpecification": {
                "TrainingImage": "img", "TrainingInputMode": "File",
                "MetricDefinitions": [{"Name": "validation:loss", "Regex": "validation:loss=([0-9.]+)"}],
            },
            "HyperParameters": {"depth": depth},
            "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 60},
        },
        tags=[{"Key": key, "Value": value} for key, value in tags],
        creation_time=created, last_modified_time=created, next_check_at=created,
    )
    if loss is not None:  # the line its algorithm printed, as the log collector reads it
        printed = (int(created.timestamp() * 1000), f"validation:loss={loss}")
        TrainingMetrics(created_job, "algo-1").record([printed])
    return created_job


@pytest.fixture
def jobs(access_key):  # noqa: F811
    mine = access_key.account_id
    job(mine, "shallow", "Completed", "2", 0.4, tags=[("team", "risk")])
    job(mine, "deep", "Completed", "6", 0.2, tags=[("team", "risk")])
    job(mine, "broken", "Failed", "9", None)
    job(OTHER_ACCOUNT, "theirs", "Completed", "4", 0.1, tags=[("team", "risk")])


def names(client, **params) -> list[str]:
    results = client.search(Resource="TrainingJob", **params)["Results"]
    return [result["TrainingJob"]["TrainingJobName"] for result in results]


def test_the_callers_jobs_are_found_by_status_tag_and_hyperparameter_as_describe_shows_them(sagemaker, jobs):
    completed = {"Filters": [{"Name": "TrainingJobStatus", "Value": "Completed"}]}
    assert sorted(names(sagemaker, SearchExpression=completed)) == ["deep", "shallow"]
    tagged = {"Filters": [{"Name": "Tags.team", "Value": "risk"}]}
    assert sorted(names(sagemaker, SearchExpression=tagged)) == ["deep", "shallow"]  # not "theirs"
    deeper = {"Filters": [{"Name": "HyperParameters.depth", "Operator": "Equals", "Value": "6"}]}
    (record,) = sagemaker.search(Resource="TrainingJob", SearchExpression=deeper)["Results"]
    described = sagemaker.describe_training_job(TrainingJobName="deep")
    assert record["TrainingJob"]["TrainingJobArn"] == described["TrainingJobArn"]
    assert record["TrainingJob"]["Tags"] == [{"Key": "team", "Value": "risk"}]
    assert record["TrainingJob"]["CreationTime"] == described["CreationTime"]


def test_jobs_are_sorted_by_creation_and_filtered_on_a_final_metric(sagemaker, jobs):
    assert names(sagemaker, SortBy="CreationTime", SortOrder="Ascending") == ["shallow", "deep", "broken"]
    better = {"Filters": [
        {"Name": "FinalMetricDataList.MetricName", "Value": "validation:loss"},
        {"Name": "FinalMetricDataList.Value", "Operator": "LessThan", "Value": "0.3"},
    ]}
    assert names(sagemaker, SearchExpression=better) == ["deep"]
