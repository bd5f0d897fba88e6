"""The pipeline engine over real rows: each step's job is made through the operation's own
handler (validation, the tenancy rule, the feature's service), so the test ends jobs by writing
their status, as the tuning reconciler's tests do. The property file is read from a stand-in store."""

import json

import pytest
from django.utils import timezone

from accounts.models import BucketOwner
from batchtransform.models import TransformJob
from logs.models import MetricStatisticSet
from pipelines import reconciler, services
from pipelines.models import PipelineExecution
from pipelines.presenters import describe_execution, execution_step
from processing.models import ProcessingJob
from protocol.context import RequestContext
from protocol.errors import ValidationException
from tests.unit.pipelines import sample
from training.models import TrainingJob

CTX = RequestContext(account_id="111111111111", region="us-east-1", access_key_id="AKIATEST")
TOKEN = "t" * 32


@pytest.fixture
def report(db, monkeypatch):
    """The account owns the pipeline's bucket; the property file's body is the test's to set."""
    BucketOwner.objects.create(bucket="bkt", account_id=CTX.account_id)
    body = {"score": 0.9}
    monkeypatch.setattr("pipelines.scope.get_bytes", lambda bucket, key: json.dumps(body).encode())
    return body


def start(parameters=None, steps=None, **extra) -> PipelineExecution:
    services.create_pipeline(
        CTX,
        {
            "PipelineName": "p1",
            "RoleArn": sample.ROLE,
            "ClientRequestToken": TOKEN,
            "PipelineDefinition": sample.text(**({"Steps": steps} if steps else {})),
        },
    )
    given = [{"Name": name, "Value": value} for name, value in (parameters or {}).items()]
    return services.start_execution(
        CTX, {"PipelineName": "p1", "ClientRequestToken": TOKEN, "PipelineParameters": given, **extra}
    )


def look(execution: PipelineExecution) -> dict[str, dict]:
    PipelineExecution.objects.filter(pk=execution.pk).update(next_check_at=None)
    reconciler.reconcile(execution.pk)
    execution.refresh_from_db()
    return {row.step_name: execution_step(row) for row in execution.steps.all()}


def end_processing(status="Completed"):
    ProcessingJob.objects.update(processing_job_status=status, processing_end_time=timezone.now())


def end_training(status="Completed"):
    TrainingJob.objects.update(training_job_status=status, training_end_time=timezone.now())


def test_an_execution_runs_its_steps_in_dependency_order_to_the_branch_the_condition_takes(report):
    execution = start({"Greeting": "hello", "Threshold": "0"})
    found = look(execution)
    assert list(found) == ["Prepare"] and found["Prepare"]["StepStatus"] == "Executing"
    job = ProcessingJob.objects.get()
    assert found["Prepare"]["Metadata"] == {"ProcessingJob": {"Arn": job.processing_job_arn}}
    assert job.processing_job_name.startswith(f"pipelines-{execution.execution_id}-Prepare-")
    assert job.request["Environment"] == {"GREETING": "hello"}
    outputs = job.request["ProcessingOutputConfig"]["Outputs"]
    assert outputs[0]["S3Output"]["S3Uri"] == f"s3://bkt/p1/{execution.execution_id}/Prepare/output/report"

    end_processing()
    found = look(execution)
    assert found["Prepare"]["StepStatus"] == "Succeeded"
    assert found["Check"]["StepStatus"] == "Succeeded"
    assert found["Check"]["Metadata"] == {"Condition": {"Outcome": "True"}}  # 0.9 >= 0
    assert found["Train"]["StepStatus"] == "Executing"
    training = TrainingJob.objects.get()
    assert training.request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] == "s3://bkt/train"
    assert training.request["ResourceConfig"]["InstanceCount"] == 1  # an Integer parameter, typed

    end_training()
    found = look(execution)
    package = found["Register-RegisterModel"]
    assert package["StepStatus"] == "Succeeded"
    assert package["Metadata"]["RegisterModel"]["Arn"].endswith(":model-package/grp/1")
    assert "TooLow" not in found
    look(execution)
    assert execution.status == "Succeeded"
    assert describe_execution(execution)["PipelineExecutionStatus"] == "Succeeded"
    counted = MetricStatisticSet.objects.filter(namespace="AWS/Sagemaker/ModelBuildingPipeline")
    assert {row.metric_name for row in counted} >= {
        "ExecutionStarted",
        "ExecutionSucceeded",
        "ExecutionDuration",
        "StepStarted",
        "StepSucceeded",
        "StepDuration",
    }


def test_the_else_branch_fail_step_fails_the_execution_with_its_message(report):
    execution = start()  # Threshold 1: 0.9 >= 1 does not hold
    look(execution)
    end_processing()
    look(execution)
    end_training()
    found = look(execution)
    assert found["Check"]["Metadata"] == {"Condition": {"Outcome": "False"}}
    assert found["TooLow"]["StepStatus"] == "Failed"
    assert found["TooLow"]["FailureReason"] == "score below 1"
    assert found["TooLow"]["Metadata"] == {"Fail": {"ErrorMessage": "score below 1"}}
    look(execution)
    assert execution.status == "Failed"
    assert "TooLow (Fail): score below 1" in execution.failure_reason


def test_a_failed_job_fails_its_step_and_the_execution_and_starts_nothing_after_it(report):
    execution = start()
    look(execution)
    ProcessingJob.objects.update(failure_reason="AlgorithmError: exit 1")
    end_processing("Failed")
    found = look(execution)
    assert found["Prepare"]["StepStatus"] == "Failed"
    assert found["Prepare"]["FailureReason"] == "AlgorithmError: exit 1"
    assert list(found) == ["Prepare"]
    assert execution.status == "Failed"
    assert execution.failure_reason.startswith(
        "Step failure: One or multiple steps failed. Prepare (Processing)"
    )


def test_a_request_the_operation_refuses_fails_the_step_with_its_error(report):
    """The tenancy rule holds for a pipeline's jobs: a bucket of another account is refused."""
    BucketOwner.objects.create(bucket="theirs", account_id="222222222222")
    execution = start()
    look(execution)
    end_processing()
    # The definition is frozen at start: the stored one is changed to name the other's bucket.
    frozen = json.loads(execution.definition)
    frozen["Steps"][1]["Arguments"]["OutputDataConfig"]["S3OutputPath"] = "s3://theirs/models"
    PipelineExecution.objects.filter(pk=execution.pk).update(definition=json.dumps(frozen))
    found = look(execution)
    assert found["Train"]["StepStatus"] == "Failed"
    assert "theirs" in found["Train"]["FailureReason"]
    assert not TrainingJob.objects.exists()


def test_a_stopped_execution_stops_its_running_job_then_ends_stopped(report):
    execution = start()
    look(execution)
    services.stop_execution(CTX, execution.arn)
    found = look(execution)
    assert execution.status == "Stopping"
    assert ProcessingJob.objects.get().processing_job_status == "Stopping"
    end_processing("Stopped")
    found = look(execution)
    assert found["Prepare"]["StepStatus"] == "Stopped"
    assert execution.status == "Stopped"


def test_a_step_recorded_by_a_look_that_died_before_creating_its_job_is_created_by_the_next(report):
    execution = start()
    look(execution)
    job = ProcessingJob.objects.get()
    row = execution.steps.get()
    row.status, row.metadata = "Starting", {}
    row.save()
    found = look(execution)  # finds the job made, rather than failing on its name
    assert found["Prepare"]["Metadata"] == {"ProcessingJob": {"Arn": job.processing_job_arn}}
    assert ProcessingJob.objects.count() == 1


def test_start_is_idempotent_by_token_and_checks_its_parameters(report):
    first = start()
    again = services.start_execution(CTX, {"PipelineName": "p1", "ClientRequestToken": TOKEN})
    assert again.pk == first.pk
    with pytest.raises(ValidationException, match="Parameters not defined in the pipeline: Nope"):
        services.start_execution(
            CTX,
            {
                "PipelineName": "p1",
                "ClientRequestToken": "u" * 32,
                "PipelineParameters": [{"Name": "Nope", "Value": "1"}],
            },
        )
    with pytest.raises(
        ValidationException, match="Parameter 'Count' of type Integer cannot take the value 'x'"
    ):
        services.start_execution(
            CTX,
            {
                "PipelineName": "p1",
                "ClientRequestToken": "v" * 32,
                "PipelineParameters": [{"Name": "Count", "Value": "x"}],
            },
        )
    assert {item["Name"]: item["Value"] for item in first.parameters} == {
        "Threshold": "1",
        "Greeting": "hi",
        "Count": "1",
    }


MODEL = {
    "Name": "CreateModel",
    "Type": "Model",
    "Arguments": {
        "ExecutionRoleArn": sample.ROLE,
        "PrimaryContainer": {
            "Image": "serve:1",
            "ModelDataUrl": {"Get": "Steps.Train.ModelArtifacts.S3ModelArtifacts"},
        },
    },
}
TRANSFORM = {
    "Name": "Score",
    "Type": "Transform",
    "Arguments": {
        "ModelName": {"Get": "Steps.CreateModel.ModelName"},
        "TransformInput": {
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bkt/in"}}
        },
        "TransformOutput": {"S3OutputPath": "s3://bkt/scored"},
        "TransformResources": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
    },
}


def test_a_model_step_makes_the_model_a_transform_step_then_runs(report):
    training = {**sample.TRAIN, "Arguments": {**sample.TRAIN["Arguments"], "InputDataConfig": []}}
    del training["Arguments"]["InputDataConfig"]
    execution = start(steps=[training, MODEL, TRANSFORM])
    look(execution)
    end_training()
    found = look(execution)
    assert found["CreateModel"]["StepStatus"] == "Succeeded"
    model_arn = found["CreateModel"]["Metadata"]["Model"]["Arn"]
    assert f":model/pipelines-{execution.execution_id}-createmodel-" in model_arn
    found = look(execution)  # the model made, the transform step is ready at the next look
    assert found["Score"]["StepStatus"] == "Executing"
    transform = TransformJob.objects.get()
    assert transform.request["ModelName"].startswith(f"pipelines-{execution.execution_id}-CreateModel-")
    assert (
        transform.model["PrimaryContainer"]["ModelDataUrl"]
        == TrainingJob.objects.get().request["OutputDataConfig"]["S3OutputPath"]
        + f"/{TrainingJob.objects.get().training_job_name}/output/model.tar.gz"
    )
    TransformJob.objects.update(transform_job_status="Completed", transform_end_time=timezone.now())
    assert look(execution)["Score"]["StepStatus"] == "Succeeded"
    look(execution)
    assert execution.status == "Succeeded"


def test_a_stop_finds_the_job_a_look_made_before_it_died(report):
    execution = start()
    look(execution)
    execution.steps.update(status="Starting", metadata={})  # the look died after creating the job
    services.stop_execution(CTX, execution.arn)
    look(execution)
    assert ProcessingJob.objects.get().processing_job_status == "Stopping"
    end_processing("Stopped")
    assert look(execution)["Prepare"]["StepStatus"] == "Stopped"
    assert execution.status == "Stopped"


def function_pipeline(output_root: str) -> list[dict]:
    """Make (a @step function) → Check on its return value: Equals 3 → TooLow, else nothing."""
    make = sample.function_step("Make")
    make["Arguments"]["OutputDataConfig"]["S3OutputPath"] = f"{output_root}/Make/results"
    check = {
        "Name": "Check",
        "Type": "Condition",
        "Arguments": {
            "Conditions": [
                {"Type": "Equals", "LeftValue": sample.delayed_return("Make", "Result[1]"), "RightValue": 3}
            ],
            "IfSteps": [sample.FAIL],
            "ElseSteps": [],
        },
    }
    return [make, check]


def test_a_condition_reads_a_step_function_s_return_value_from_its_results_json(report, monkeypatch):
    """The pipeline reads `<S3OutputPath>/results.json` (what invoke_function writes) as its account."""
    objects = {("bkt", "fn/Make/results/results.json"): b'{"Result": [1, 3]}'}
    monkeypatch.setattr("pipelines.scope.get_bytes", lambda bucket, key: objects[(bucket, key)])
    execution = start(steps=function_pipeline("s3://bkt/fn"))
    look(execution)
    end_training()
    found = look(execution)
    assert found["Check"]["Metadata"] == {"Condition": {"Outcome": "True"}}
    assert look(execution)["TooLow"]["StepStatus"] == "Failed"


def test_a_return_value_in_another_account_s_bucket_is_not_read(report, monkeypatch):
    BucketOwner.objects.create(bucket="theirs", account_id="222222222222")
    execution = start(steps=function_pipeline("s3://bkt/fn"))
    look(execution)
    # The definition is frozen at start: the stored one is changed to read the other's bucket.
    end_training()
    frozen = json.loads(execution.definition)
    frozen["Steps"][1]["Arguments"]["Conditions"][0]["LeftValue"]["Std:JsonGet"]["S3Uri"] = "s3://theirs/r.json"
    PipelineExecution.objects.filter(pk=execution.pk).update(definition=json.dumps(frozen))
    found = look(execution)
    assert found["Check"]["StepStatus"] == "Failed"
    assert found["Check"]["FailureReason"] == (
        "ClientError: the JSON object at s3://theirs/r.json could not be read: "
        "Could not read s3://theirs/r.json: AccessDenied"
    )
