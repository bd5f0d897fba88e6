"""A SageMaker Model Building Pipeline written with the SageMaker Python SDK v2, unchanged, run on
the shell image: a ProcessingStep writing a PropertyFile and a training set, a TrainingStep reading
the processing output, a ConditionStep on the file's value (JsonGet) against a parameter, a
ModelStep registering the model in the if-branch and a FailStep in the else-branch. Processing and
training are cached: the second execution reuses the first one's jobs.

AWS behaviour checked: the SDK's `Pipeline.upsert/start/wait/list_steps/list_parameters` calls
(CreatePipeline, StartPipelineExecution, DescribePipelineExecution, ListPipelineExecutionSteps,
ListPipelineParametersForExecution shapes in botocore's sagemaker model); each step's Metadata
names the job it made (PipelineExecutionStepMetadata); the execution Fails when a FailStep runs,
and the FailStep's ErrorMessage is its step's FailureReason (sagemaker.workflow.fail_step); a step
with `CacheConfig(enable_caching=True)` whose arguments are those of an earlier successful run
reuses its job, and says so in CacheHitResult.SourcePipelineExecutionArn (AWS docs, "Caching
pipeline steps")."""

import time

import pytest
from botocore.exceptions import WaiterError
from sagemaker.estimator import Estimator
from sagemaker.inputs import TrainingInput
from sagemaker.model import Model
from sagemaker.processing import ProcessingOutput, Processor
from sagemaker.workflow.condition_step import ConditionStep
from sagemaker.workflow.conditions import ConditionGreaterThanOrEqualTo
from sagemaker.workflow.fail_step import FailStep
from sagemaker.workflow.functions import Join, JsonGet
from sagemaker.workflow.model_step import ModelStep
from sagemaker.workflow.parameters import ParameterFloat, ParameterInteger, ParameterString
from sagemaker.workflow.pipeline import Pipeline
from sagemaker.workflow.pipeline_context import PipelineSession
from sagemaker.workflow.properties import PropertyFile
from sagemaker.workflow.steps import CacheConfig, ProcessingStep, TrainingStep

from tests.e2e.conftest import unique_name
from tests.e2e.sdk import ROLE

PREPARE = (
    'echo "{\\"score\\": 0.9}" > /opt/ml/processing/report/report.json; '
    'echo "$GREETING" > /opt/ml/processing/train/data.csv'
)
TRAIN = "cp /opt/ml/input/data/train/data.csv /opt/ml/model/greeting.txt"
CACHE = CacheConfig(enable_caching=True, expire_after="PT1H")


def build(name: str, image: str, bucket: str, group: str, session: PipelineSession) -> Pipeline:
    greeting = ParameterString(name="Greeting", default_value="hello")
    instances = ParameterInteger(name="TrainingInstances", default_value=1)
    min_score = ParameterFloat(name="MinScore", default_value=0.5)
    processor = Processor(
        role=ROLE,
        image_uri=image,
        instance_count=1,
        instance_type="ml.m5.large",
        env={"ALGO_SCRIPT": PREPARE, "GREETING": greeting},
        sagemaker_session=session,
    )
    report = PropertyFile(name="Report", output_name="report", path="report.json")
    prepare = ProcessingStep(
        name="Prepare",
        step_args=processor.run(
            outputs=[
                ProcessingOutput(output_name="report", source="/opt/ml/processing/report"),
                ProcessingOutput(output_name="train", source="/opt/ml/processing/train"),
            ]
        ),
        property_files=[report],
        cache_config=CACHE,
    )
    estimator = Estimator(
        image_uri=image,
        role=ROLE,
        instance_count=instances,
        instance_type="ml.m5.large",
        output_path=f"s3://{bucket}/models",
        environment={"ALGO_SCRIPT": TRAIN},
        sagemaker_session=session,
    )
    train_data = prepare.properties.ProcessingOutputConfig.Outputs["train"].S3Output.S3Uri
    train = TrainingStep(
        name="Train",
        step_args=estimator.fit(inputs={"train": TrainingInput(s3_data=train_data)}),
        cache_config=CACHE,
    )
    model = Model(
        image_uri=image,
        model_data=train.properties.ModelArtifacts.S3ModelArtifacts,
        role=ROLE,
        sagemaker_session=session,
    )
    register = ModelStep(
        name="Register",
        step_args=model.register(
            content_types=["text/csv"],
            response_types=["text/csv"],
            inference_instances=["ml.m5.large"],
            transform_instances=["ml.m5.large"],
            model_package_group_name=group,
            approval_status="Approved",
        ),
    )
    too_low = FailStep(name="TooLow", error_message=Join(on=" ", values=["score below", min_score]))
    check = ConditionStep(
        name="Check",
        conditions=[
            ConditionGreaterThanOrEqualTo(
                left=JsonGet(step_name=prepare.name, property_file=report, json_path="score"), right=min_score
            )
        ],
        if_steps=[register],
        else_steps=[too_low],
    )
    return Pipeline(
        name=name,
        parameters=[greeting, instances, min_score],
        steps=[prepare, train, check],
        sagemaker_session=session,
    )


def test_the_sdks_pipeline_runs_processing_training_condition_and_registers_or_fails(
    sdk_session, sagemaker, s3, bucket, shell_algo_image
):
    started = time.monotonic()
    session = PipelineSession(
        boto_session=sdk_session.boto_session, sagemaker_client=sdk_session.sagemaker_client
    )
    group = unique_name("pipeline-models")
    pipeline = build(unique_name("churn"), shell_algo_image, bucket, group, session)
    pipeline.upsert(role_arn=ROLE)
    pipeline.upsert(role_arn=ROLE, description="again")  # exists: the SDK updates it

    passing = pipeline.start(parameters={"Greeting": "bonjour"})
    # ~15 s of jobs (one at a time on the test node's 2 CPUs); the bound is for a loaded machine.
    passing.wait(delay=1, max_attempts=300)
    # The same arguments for Prepare and Train: both cached; 0.9 < 0.95: the else-branch.
    failing = pipeline.start(parameters={"Greeting": "bonjour", "MinScore": 0.95})
    with pytest.raises(WaiterError, match="terminal failure state"):
        failing.wait(delay=1, max_attempts=300)

    steps = {step["StepName"]: step for step in passing.list_steps()}
    assert {name: step["StepStatus"] for name, step in steps.items()} == {
        "Prepare": "Succeeded",
        "Train": "Succeeded",
        "Check": "Succeeded",
        "Register-RegisterModel": "Succeeded",
    }
    assert steps["Check"]["Metadata"] == {"Condition": {"Outcome": "True"}}
    training = sagemaker.describe_training_job(
        TrainingJobName=steps["Train"]["Metadata"]["TrainingJob"]["Arn"].split("/")[-1]
    )
    processing = sagemaker.describe_processing_job(
        ProcessingJobName=steps["Prepare"]["Metadata"]["ProcessingJob"]["Arn"].split("/")[-1]
    )
    train_output = [
        out for out in processing["ProcessingOutputConfig"]["Outputs"] if out["OutputName"] == "train"
    ]
    channel = training["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"]
    assert channel == train_output[0]["S3Output"]["S3Uri"]
    (package,) = sagemaker.list_model_packages(ModelPackageGroupName=group)["ModelPackageSummaryList"]
    assert package["ModelPackageArn"] == steps["Register-RegisterModel"]["Metadata"]["RegisterModel"]["Arn"]
    registered = sagemaker.describe_model_package(ModelPackageName=package["ModelPackageArn"])
    model_data = registered["InferenceSpecification"]["Containers"][0]["ModelDataUrl"]
    assert model_data == training["ModelArtifacts"]["S3ModelArtifacts"]
    parameters = {item["Name"]: item["Value"] for item in passing.list_parameters()["PipelineParameters"]}
    assert parameters == {"Greeting": "bonjour", "TrainingInstances": "1", "MinScore": "0.5"}

    failed = failing.describe()
    assert failed["PipelineExecutionStatus"] == "Failed"
    failing_steps = {step["StepName"]: step for step in failing.list_steps()}
    for cached in ("Prepare", "Train"):
        assert failing_steps[cached]["CacheHitResult"] == {"SourcePipelineExecutionArn": passing.arn}
        assert failing_steps[cached]["Metadata"] == steps[cached]["Metadata"]
    assert "CacheHitResult" not in steps["Prepare"]
    fail_step = failing_steps["TooLow"]
    assert fail_step["StepStatus"] == "Failed" and fail_step["FailureReason"] == "score below 0.95"
    assert "TooLow" in failed["FailureReason"]
    print_orchestration_overhead(passing.describe(), processing, training)
    pipeline.delete()
    print(f"pipeline e2e: {time.monotonic() - started:.1f} s")


def print_orchestration_overhead(execution: dict, processing: dict, training: dict) -> None:
    """Issue 27's figure: the execution's wall time against its jobs' own (creation to end; the
    two run one after the other), the difference being what the pipeline's orchestration costs."""
    wall = (execution["LastModifiedTime"] - execution["CreationTime"]).total_seconds()
    jobs = (processing["ProcessingEndTime"] - processing["CreationTime"]).total_seconds() + (
        training["TrainingEndTime"] - training["CreationTime"]).total_seconds()
    print(f"pipeline execution: {wall:.1f} s wall, {jobs:.1f} s in its jobs, {wall - jobs:.1f} s the rest")
