"""A pipeline of the SageMaker Python SDK v2, unchanged, whose steps are the jobs around a model:
a TrainingStep, a TuningStep of two training jobs, two ModelSteps (`model.create(...)`: the
trained model, and the tuning's best model through `get_top_model_s3_uri`) and a TransformStep
batch-transforming with the best model (`properties.ModelName`) into a per-execution folder
(`ExecutionVariables.PIPELINE_EXECUTION_ID`). The worker is killed while the
training step's container runs: the execution still ends Succeeded, each job made once.

AWS behaviour checked: ListPipelineExecutionSteps' Metadata names each step's resource
(PipelineExecutionStepMetadata's Model, TrainingJob, TuningJob, TransformJob members); a ModelStep
of `model.create()` is listed as `<name>-CreateModel` (sagemaker.workflow.model_step); the tuning
step's TrainingJobSummaries[0] is its best training job (TuningStep.get_top_model_s3_uri's
documentation: "The best training job model is at index 0"); the transform's output is
`<output path>/<input object>.out` (CreateTransformJob's TransformOutput)."""

import time

from sagemaker.estimator import Estimator
from sagemaker.model import Model
from sagemaker.transformer import Transformer
from sagemaker.tuner import HyperparameterTuner, IntegerParameter
from sagemaker.workflow.execution_variables import ExecutionVariables
from sagemaker.workflow.functions import Join
from sagemaker.workflow.model_step import ModelStep
from sagemaker.workflow.pipeline import Pipeline
from sagemaker.workflow.pipeline_context import PipelineSession
from sagemaker.workflow.steps import TrainingStep, TransformStep, TuningStep

from tests.e2e.conftest import unique_name
from tests.e2e.sdk import ROLE
from tests.e2e.test_tuning_jobs import SCRIPT, training_container

pytest_plugins = ["tests.e2e.hosting_fixtures", "tests.e2e.transform_fixtures"]  # transformer_image

# The training step's container runs 3 s, long enough for the worker to be killed while it does.
TRAIN = "sleep 3; echo trained > /opt/ml/model/model.txt"
METRIC = {"Name": "validation:loss", "Regex": r"validation:loss=([0-9.]+)"}


def build(name: str, images: dict, bucket: str, prefix: str, session: PipelineSession) -> Pipeline:
    """Train ∥ Tune → (TrainedModel, BestModel) → Transform with BestModel."""

    def estimator(script: str, output: str) -> Estimator:
        return Estimator(
            image_uri=images["shell"], role=ROLE, instance_count=1, instance_type="ml.m5.large",
            output_path=f"s3://{bucket}/{prefix}/{output}", environment={"ALGO_SCRIPT": script},
            sagemaker_session=session,
        )

    def model_step(step_name: str, model_data) -> ModelStep:
        model = Model(
            image_uri=images["transformer"], model_data=model_data, role=ROLE, sagemaker_session=session
        )
        return ModelStep(name=step_name, step_args=model.create(instance_type="ml.m5.large"))

    train = TrainingStep(name="Train", step_args=estimator(TRAIN, "trained").fit())
    tuner = HyperparameterTuner(
        estimator(SCRIPT, "tuned"), objective_metric_name="validation:loss", objective_type="Minimize",
        hyperparameter_ranges={"depth": IntegerParameter(1, 6)}, metric_definitions=[METRIC],
        strategy="Random", max_jobs=2, max_parallel_jobs=2,
    )
    tune = TuningStep(name="Tune", step_args=tuner.fit())
    trained = model_step("TrainedModel", train.properties.ModelArtifacts.S3ModelArtifacts)
    best_model_data = tune.get_top_model_s3_uri(top_k=0, s3_bucket=bucket, prefix=f"{prefix}/tuned")
    best = model_step("BestModel", best_model_data)
    # Per execution, as users write it: `<prefix>/<execution id>/out`.
    output = Join(on="/", values=["s3:/", bucket, prefix, ExecutionVariables.PIPELINE_EXECUTION_ID, "out"])
    transformer = Transformer(
        model_name=best.properties.ModelName, instance_count=1, instance_type="ml.m5.large",
        output_path=output, assemble_with="Line", accept="text/csv", sagemaker_session=session,
    )
    transform = TransformStep(
        name="Transform",
        step_args=transformer.transform(
            f"s3://{bucket}/{prefix}/in/", content_type="text/csv", split_type="Line"
        ),
    )
    return Pipeline(name=name, steps=[train, tune, trained, best, transform], sagemaker_session=session)


def test_train_tune_model_and_transform_steps_survive_a_killed_worker(
    stack, sdk_session, sagemaker, s3, bucket, shell_algo_image, transformer_image
):
    started = time.monotonic()
    session = PipelineSession(
        boto_session=sdk_session.boto_session, sagemaker_client=sdk_session.sagemaker_client
    )
    prefix = unique_name("pipejobs")
    s3.put_object(Bucket=bucket, Key=f"{prefix}/in/rows.csv", Body=b"one\ntwo\n")
    images = {"shell": shell_algo_image, "transformer": transformer_image}
    pipeline = build(unique_name("jobs"), images, bucket, prefix, session)
    pipeline.upsert(role_arn=ROLE)

    execution = pipeline.start()
    train_arn = _training_job_arn(execution)
    container = training_container(train_arn)
    stack.kill_worker()
    killed_at = time.monotonic()
    try:
        container.wait(timeout=60)  # the training job's container ends while no worker watches
    finally:
        stack.start_worker()
    down = time.monotonic() - killed_at
    execution.wait(delay=1, max_attempts=300)

    described = execution.describe()
    assert described["PipelineExecutionStatus"] == "Succeeded", described.get("FailureReason")
    steps = {step["StepName"]: step for step in execution.list_steps()}
    assert {name: step["StepStatus"] for name, step in steps.items()} == dict.fromkeys(
        ("Train", "Tune", "TrainedModel-CreateModel", "BestModel-CreateModel", "Transform"), "Succeeded"
    )
    assert steps["Train"]["Metadata"]["TrainingJob"]["Arn"] == train_arn
    tuning = sagemaker.describe_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=_name(steps["Tune"]["Metadata"]["TuningJob"]["Arn"])
    )
    assert tuning["HyperParameterTuningJobStatus"] == "Completed"
    best_job = sagemaker.describe_training_job(TrainingJobName=tuning["BestTrainingJob"]["TrainingJobName"])
    trained_job = sagemaker.describe_training_job(TrainingJobName=_name(train_arn))
    models = {
        step: sagemaker.describe_model(
            ModelName=_name(steps[f"{step}-CreateModel"]["Metadata"]["Model"]["Arn"])
        )
        for step in ("TrainedModel", "BestModel")
    }
    for step, job in (("TrainedModel", trained_job), ("BestModel", best_job)):
        model_data = models[step]["PrimaryContainer"]["ModelDataUrl"]
        assert model_data == job["ModelArtifacts"]["S3ModelArtifacts"]
    transform = sagemaker.describe_transform_job(
        TransformJobName=_name(steps["Transform"]["Metadata"]["TransformJob"]["Arn"])
    )
    assert transform["ModelName"] == models["BestModel"]["ModelName"]
    execution_id = _name(execution.arn)
    output = s3.get_object(Bucket=bucket, Key=f"{prefix}/{execution_id}/out/rows.csv.out")["Body"].read()
    assert output == b"ONE\nTWO\n"
    _assert_each_job_made_once(sagemaker, execution_id)
    pipeline.delete()
    wall = (described["LastModifiedTime"] - described["CreationTime"]).total_seconds()
    total = time.monotonic() - started
    print(f"pipeline jobs e2e: {total:.1f} s (execution {wall:.1f} s, worker down {down:.1f} s)")


def _training_job_arn(execution, timeout: float = 120.0) -> str:
    """The Train step's job, once the execution made it."""
    deadline = time.monotonic() + timeout
    while True:
        steps = {step["StepName"]: step for step in execution.list_steps()}
        job = steps.get("Train", {}).get("Metadata", {}).get("TrainingJob")
        if job:
            return job["Arn"]
        assert time.monotonic() < deadline, f"no training job within {timeout}s: {steps}"
        time.sleep(0.3)


def _assert_each_job_made_once(sagemaker, execution_id: str) -> None:
    """Every resource of the execution is named after it: one training job, two of the tuning
    job's, one tuning job, two models, one transform job, across the worker's death."""
    def count(operation: str, member: str) -> int:
        return len(getattr(sagemaker, operation)(NameContains=execution_id, MaxResults=100)[member])

    assert count("list_training_jobs", "TrainingJobSummaries") == 3
    assert count("list_hyper_parameter_tuning_jobs", "HyperParameterTuningJobSummaries") == 1
    assert count("list_models", "Models") == 2
    assert count("list_transform_jobs", "TransformJobSummaries") == 1


def _name(arn: str) -> str:
    return arn.split("/")[-1]
