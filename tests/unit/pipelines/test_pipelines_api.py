"""The pipeline operations through a real boto3 client (tests/unit/protocol/conftest.py): shapes
as botocore's sagemaker model reads them, and SageMaker's errors (the SDK's Pipeline.upsert
updates on a ValidationException saying "already exists"; an unknown pipeline or execution is
ResourceNotFound)."""

import json

import pytest
from botocore.exceptions import ClientError
from django.utils import timezone

from accounts import buckets
from pipelines.models import PipelineExecution
from tests.unit.pipelines import sample
from tests.unit.protocol.conftest import REGION, access_key, make_client  # noqa: F401  (fixtures)

ACCOUNT = "210987654321"  # the key tests/unit/protocol/conftest.py makes
ROLE = f"arn:aws:iam::{ACCOUNT}:role/r"


@pytest.fixture
def sagemaker(make_client, monkeypatch):  # noqa: F811
    monkeypatch.setattr("pipelines.services.nudge", lambda execution_id: None)  # no worker here
    client, _ = make_client()
    return client


def definition(**changes) -> str:
    document = sample.document(**changes)
    return json.dumps(document).replace("111111111111", ACCOUNT)


def error_of(raised) -> tuple[str, str]:
    error = raised.value.response["Error"]
    return error["Code"], error["Message"]


def test_a_pipeline_is_created_described_listed_updated_and_deleted(sagemaker):
    arn = sagemaker.create_pipeline(PipelineName="Churn", PipelineDefinition=definition(), RoleArn=ROLE)[
        "PipelineArn"
    ]
    assert arn == f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/churn"
    described = sagemaker.describe_pipeline(PipelineName="Churn")
    assert described["PipelineStatus"] == "Active" and described["PipelineName"] == "Churn"
    assert json.loads(described["PipelineDefinition"])["Version"] == "2020-12-01"
    assert [
        s["PipelineName"] for s in sagemaker.list_pipelines(PipelineNamePrefix="Ch")["PipelineSummaries"]
    ] == ["Churn"]
    sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": "team", "Value": "a"}])  # the SDK's upsert does
    assert sagemaker.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "a"}]
    sagemaker.update_pipeline(PipelineName="Churn", PipelineDescription="v2")
    assert sagemaker.describe_pipeline(PipelineName=arn)["PipelineDescription"] == "v2"
    assert sagemaker.delete_pipeline(PipelineName="Churn")["PipelineArn"] == arn
    with pytest.raises(ClientError) as raised:
        sagemaker.describe_pipeline(PipelineName="Churn")
    assert error_of(raised) == ("ResourceNotFound", f"Pipeline '{arn}' does not exist.")


def test_a_second_pipeline_of_the_same_name_is_refused_with_already_exists(sagemaker):
    sagemaker.create_pipeline(PipelineName="Twice", PipelineDefinition=definition(), RoleArn=ROLE)
    with pytest.raises(ClientError) as raised:
        sagemaker.create_pipeline(PipelineName="Twice", PipelineDefinition=definition(), RoleArn=ROLE)
    code, message = error_of(raised)
    assert code == "ValidationException" and "already exists" in message


def test_a_bad_definition_is_a_validation_exception_naming_the_problem(sagemaker):
    bad = definition(Steps=[{"Name": "Notify", "Type": "Lambda", "Arguments": {}}])
    with pytest.raises(ClientError) as raised:
        sagemaker.create_pipeline(PipelineName="Bad", PipelineDefinition=bad, RoleArn=ROLE)
    assert error_of(raised) == (
        "ValidationException",
        "Invalid pipeline definition: Step 'Notify': step type Lambda is not supported by Sageport.",
    )
    with pytest.raises(ClientError) as raised:
        sagemaker.create_pipeline(PipelineName="Bad", RoleArn=ROLE)
    assert error_of(raised)[0] == "ValidationException"


def test_an_execution_is_started_and_read_back_with_its_parameters_and_definition(sagemaker):
    sagemaker.create_pipeline(PipelineName="Run", PipelineDefinition=definition(), RoleArn=ROLE)
    arn = sagemaker.start_pipeline_execution(
        PipelineName="Run",
        PipelineExecutionDisplayName="first",
        PipelineParameters=[{"Name": "Threshold", "Value": "5"}],
    )["PipelineExecutionArn"]
    assert arn.startswith(f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/run/execution/")
    described = sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)
    assert described["PipelineExecutionStatus"] == "Executing"
    assert described["PipelineExecutionDisplayName"] == "first"
    parameters = sagemaker.list_pipeline_parameters_for_execution(PipelineExecutionArn=arn)[
        "PipelineParameters"
    ]
    assert {"Name": "Threshold", "Value": "5"} in parameters and {
        "Name": "Greeting",
        "Value": "hi",
    } in parameters
    assert sagemaker.describe_pipeline_definition_for_execution(PipelineExecutionArn=arn)[
        "PipelineDefinition"
    ]
    summaries = sagemaker.list_pipeline_executions(PipelineName="Run")["PipelineExecutionSummaries"]
    assert [s["PipelineExecutionArn"] for s in summaries] == [arn]
    assert sagemaker.list_pipeline_execution_steps(PipelineExecutionArn=arn)["PipelineExecutionSteps"] == []
    assert sagemaker.stop_pipeline_execution(PipelineExecutionArn=arn)["PipelineExecutionArn"] == arn
    assert (
        sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)["PipelineExecutionStatus"]
        == "Stopping"
    )
    with pytest.raises(ClientError) as raised:
        sagemaker.delete_pipeline(PipelineName="Run")
    assert error_of(raised)[0] == "ConflictException"


def test_an_unknown_execution_is_resource_not_found(sagemaker):
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/none/execution/abc"
    with pytest.raises(ClientError) as raised:
        sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)
    assert error_of(raised) == ("ResourceNotFound", f"Pipeline execution '{arn}' does not exist.")


def test_a_definition_is_read_from_the_callers_bucket_and_never_from_anothers(sagemaker, monkeypatch):
    """PipelineDefinitionS3Location is read as the caller's account (the tenancy rule)."""
    monkeypatch.setattr("pipelines.services.get_bytes", lambda bucket, key: definition().encode())
    location = {"Bucket": "bucket", "ObjectKey": "defs/p.json"}
    sagemaker.create_pipeline(PipelineName="FromS3", PipelineDefinitionS3Location=location, RoleArn=ROLE)
    assert json.loads(sagemaker.describe_pipeline(PipelineName="FromS3")["PipelineDefinition"])["Steps"]
    buckets.claim("theirs", "111122223333")
    with pytest.raises(ClientError) as raised:
        sagemaker.create_pipeline(
            PipelineName="Foreign",
            PipelineDefinitionS3Location={"Bucket": "theirs", "ObjectKey": "p.json"},
            RoleArn=ROLE,
        )
    code, message = error_of(raised)
    assert code == "ValidationException" and "s3://theirs/p.json could not be read" in message
    assert "AccessDenied" in message


def test_a_failed_execution_is_retried_from_its_failed_steps_and_nothing_else_is(sagemaker):
    """RetryPipelineExecution (botocore: PipelineExecutionArn, ClientRequestToken, optional
    ParallelismConfiguration; errors ConflictException, ResourceNotFound): the same execution runs
    again, its failed step as a new attempt, its succeeded step kept; the same token again is the
    same call; an execution that is not Failed is a conflict. The worker's part is in
    test_retries.py."""
    sagemaker.create_pipeline(PipelineName="Again", PipelineDefinition=definition(), RoleArn=ROLE)
    arn = sagemaker.start_pipeline_execution(PipelineName="Again")["PipelineExecutionArn"]
    token = "r" * 32
    with pytest.raises(ClientError) as raised:
        sagemaker.retry_pipeline_execution(PipelineExecutionArn=arn, ClientRequestToken=token)
    assert error_of(raised) == (
        "ConflictException",
        f"Pipeline execution '{arn}' is Executing; only a Failed execution can be retried.",
    )
    execution = PipelineExecution.objects.get(arn=arn)
    now = timezone.now()
    for name, kind, status in (("Prepare", "Processing", "Succeeded"), ("Train", "Training", "Failed")):
        execution.steps.create(
            step_name=name, step_type=kind, status=status, resource_name=f"job-{name}", start_time=now
        )
    PipelineExecution.objects.filter(pk=execution.pk).update(status="Failed", failure_reason="Step failure")

    assert (
        sagemaker.retry_pipeline_execution(
            PipelineExecutionArn=arn,
            ClientRequestToken=token,
            ParallelismConfiguration={"MaxParallelExecutionSteps": 2},
        )["PipelineExecutionArn"]
        == arn
    )
    described = sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)
    assert described["PipelineExecutionStatus"] == "Executing" and "FailureReason" not in described
    assert described["ParallelismConfiguration"] == {"MaxParallelExecutionSteps": 2}
    listed = sagemaker.list_pipeline_execution_steps(PipelineExecutionArn=arn)["PipelineExecutionSteps"]
    assert {step["StepName"]: (step["StepStatus"], step["AttemptCount"]) for step in listed} == {
        "Prepare": ("Succeeded", 1),
        "Train": ("Starting", 2),
    }
    # The same call again (the SDK retries on a lost answer): the same execution, nothing more.
    sagemaker.retry_pipeline_execution(PipelineExecutionArn=arn, ClientRequestToken=token)
    assert execution.steps.get(step_name="Train").attempt_count == 2
    with pytest.raises(ClientError) as raised:
        sagemaker.retry_pipeline_execution(PipelineExecutionArn=f"{arn}x", ClientRequestToken="s" * 32)
    assert error_of(raised)[0] == "ResourceNotFound"
