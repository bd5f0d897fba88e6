"""SageMaker Pipelines' `@step` functions with the SageMaker Python SDK v2, unchanged, in an image
with Python 3.11 and the SDK (scripts/build-images.sh python-sagemaker).

The SDK compiles a `@step` to a Training step whose job runs its bootstrap scripts (the
`sagemaker_remote_function_bootstrap` channel) and then `sagemaker.remote_function.invoke_function`,
which reads the pickled function and arguments from S3 and writes the pickled return value (and
results.json when a later step reads it) under the job's S3OutputPath. A DelayedReturn passed to
another @step is read by that step's container; one that a ConditionStep compares is a
`Std:JsonGet` on the S3 URI of results.json, which the pipeline itself evaluates.

An ordinary TrainingStep in the condition's branch takes Report's return value as an environment
variable of its job (its shell script fails unless it is the value expected).

AWS behaviour checked: `execution.result(step_name)` gives a function step's return value (the
SDK reads it back through the step's TrainingJob metadata); a function that raises fails its step
with the training job's FailureReason, `AlgorithmError: <the exception's repr>, exit code: 1`
(sagemaker.remote_function.errors.handle_error writes the repr to /opt/ml/output/failure)."""

import time

from sagemaker.estimator import Estimator
from sagemaker.workflow.condition_step import ConditionStep
from sagemaker.workflow.conditions import ConditionGreaterThanOrEqualTo
from sagemaker.workflow.fail_step import FailStep
from sagemaker.workflow.function_step import step
from sagemaker.workflow.parameters import ParameterInteger
from sagemaker.workflow.pipeline import Pipeline
from sagemaker.workflow.pipeline_context import PipelineSession
from sagemaker.workflow.steps import TrainingStep

from tests.e2e.conftest import unique_name
from tests.e2e.sdk import ROLE


def build(name: str, images: dict, bucket: str, session: PipelineSession) -> Pipeline:
    """Make(count) → Total(made) → Check(total >= threshold) → Report(made, total) → UseReport
    (a TrainingStep) | TooSmall.

    The functions are local so that cloudpickle sends them by value (the container cannot import
    this test module)."""
    options = {"image_uri": images["sdk"], "instance_type": "ml.m5.large", "role": ROLE}
    count = ParameterInteger(name="Count", default_value=4)
    threshold = ParameterInteger(name="Threshold", default_value=5)

    @step(name="Make", **options)
    def make(n: int) -> dict:
        return {"values": list(range(1, n + 1)), "label": "made"}

    @step(name="Total", **options)
    def total(made: dict) -> int:
        return sum(made["values"])

    @step(name="Report", **options)
    def report(label: str, total: int) -> str:
        return f"{label}: {total}"

    made = make(count)
    summed = total(made)
    reported = report(made["label"], summed)
    estimator = Estimator(
        image_uri=images["shell"], role=ROLE, instance_count=1, instance_type="ml.m5.large",
        output_path=f"s3://{bucket}/fn", sagemaker_session=session,
        environment={"ALGO_SCRIPT": 'test "$REPORT" = "made: 10"', "REPORT": reported},
    )
    check = ConditionStep(
        name="Check",
        conditions=[ConditionGreaterThanOrEqualTo(left=summed, right=threshold)],
        if_steps=[reported, TrainingStep(name="UseReport", step_args=estimator.fit())],
        else_steps=[FailStep(name="TooSmall", error_message="the total is below the threshold")],
    )
    return Pipeline(name=name, parameters=[count, threshold], steps=[check], sagemaker_session=session)


def build_failing(name: str, image: str, session: PipelineSession) -> Pipeline:
    @step(name="Boom", image_uri=image, instance_type="ml.m5.large", role=ROLE)
    def boom() -> int:
        raise ValueError("no data for this run")

    return Pipeline(name=name, steps=[boom()], sagemaker_session=session)


def test_step_functions_pass_their_results_on_through_a_condition_and_a_raise_fails_its_step(
    stack, sdk_session, bucket, python_sagemaker_image, shell_algo_image
):
    started = time.monotonic()
    session = PipelineSession(
        boto_session=sdk_session.boto_session, sagemaker_client=sdk_session.sagemaker_client
    )
    images = {"sdk": python_sagemaker_image, "shell": shell_algo_image}
    pipeline = build(unique_name("fnsteps"), images, bucket, session)
    failing = build_failing(unique_name("fnboom"), python_sagemaker_image, session)
    for made in (pipeline, failing):
        made.upsert(role_arn=ROLE)
    execution = pipeline.start()
    failed_execution = failing.start()
    small = pipeline.start(parameters={"Count": 2})  # 1 + 2 < 5: the else branch

    _wait_ended(execution)
    steps = {found["StepName"]: found for found in execution.list_steps()}
    assert {name: found["StepStatus"] for name, found in steps.items()} == dict.fromkeys(
        ("Make", "Total", "Check", "Report", "UseReport"), "Succeeded"
    ), [found.get("FailureReason") for found in steps.values()]
    assert steps["Check"]["Metadata"]["Condition"]["Outcome"] == "True"
    assert execution.result(step_name="Make") == {"values": [1, 2, 3, 4], "label": "made"}
    assert execution.result(step_name="Total") == 10
    assert execution.result(step_name="Report") == "made: 10"

    _wait_ended(small)
    small_steps = {found["StepName"]: found for found in small.list_steps()}
    assert small_steps["Check"]["Metadata"]["Condition"]["Outcome"] == "False"
    assert small_steps["TooSmall"]["StepStatus"] == "Failed"
    assert small.result(step_name="Total") == 3

    _wait_ended(failed_execution)
    (boom,) = failed_execution.list_steps()
    assert boom["StepStatus"] == "Failed"
    assert boom["FailureReason"] == "AlgorithmError: ValueError('no data for this run'), exit code: 1"
    failure = failed_execution.describe()["FailureReason"]
    assert "Boom (Training): AlgorithmError: ValueError('no data for this run')" in failure
    for made in (pipeline, failing):
        made.delete()
    print(f"function steps e2e: {time.monotonic() - started:.1f} s")


def _wait_ended(execution, timeout: float = 300.0) -> None:
    """Until the execution ended (the SDK's waiter raises on a Failed one)."""
    deadline = time.monotonic() + timeout
    while execution.describe()["PipelineExecutionStatus"] in ("Executing", "Stopping"):
        assert time.monotonic() < deadline, f"the execution did not end within {timeout}s"
        time.sleep(0.5)
