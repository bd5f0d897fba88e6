"""Hyperparameter tuning and SageMaker Pipelines with the SageMaker Python SDK v3 (sagemaker 3.x,
its own virtualenv), each a user's script run unchanged in a subprocess configured by the
stack's env file alone, on the shell image: every training job prints the objective
(depth - 3)^2 computed from its hyperparameters (tests/e2e/test_tuning_jobs.py's SCRIPT).

SDK v3's shapes: `sagemaker.train.tuner.HyperparameterTuner` around a `ModelTrainer` calls
CreateHyperParameterTuningJob through sagemaker-core's `HyperParameterTuningJob.create`, waits by
polling DescribeHyperParameterTuningJob, and `best_training_job()` reads its BestTrainingJob;
`sagemaker.mlops.workflow.pipeline.Pipeline` writes the pipeline definition JSON from steps whose
`step_args` come from `ModelTrainer.train()` / `HyperparameterTuner.tune()` under a
`PipelineSession`, then upsert (CreatePipeline, after resolving its role), start
(StartPipelineExecution) and wait (botocore's waiter on DescribePipelineExecution)."""

import os
import subprocess
import textwrap

from tests.conftest import read_env_file
from tests.e2e.conftest import unique_name
from tests.e2e.sdk import ROLE
from tests.e2e.test_tuning_jobs import SCRIPT

TUNER_SCRIPT = textwrap.dedent("""
    import sys
    from sagemaker.core.parameter import IntegerParameter
    from sagemaker.train import ModelTrainer
    from sagemaker.train.configs import Compute
    from sagemaker.train.tuner import HyperparameterTuner

    image, role, algo_script, base_name = sys.argv[1:5]
    trainer = ModelTrainer(
        training_image=image,
        role=role,
        compute=Compute(instance_type="ml.m5.large", instance_count=1, volume_size_in_gb=1),
        environment={"ALGO_SCRIPT": algo_script},
        hyperparameters={"epochs": 1},
    )
    tuner = HyperparameterTuner(
        model_trainer=trainer,
        objective_metric_name="validation:loss",
        objective_type="Minimize",
        hyperparameter_ranges={"depth": IntegerParameter(1, 6)},
        metric_definitions=[{"Name": "validation:loss", "Regex": r"validation:loss=([0-9.]+)"}],
        strategy="Random",
        max_jobs=3,
        max_parallel_jobs=2,
        base_tuning_job_name=base_name,
    )
    tuner.tune(wait=False)
    tuner.wait()
    print(tuner.latest_tuning_job.hyper_parameter_tuning_job_name, tuner.best_training_job())
""")


def run_v3(stack, sdk_v3_python: str, tmp_path, script: str, *args: str) -> list[str]:
    """Runs `script` with SDK v3's Python, configured by the stack's env file alone; returns the
    words of the last line it printed."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **read_env_file(stack.data_dir / "env")}
    result = subprocess.run(
        [sdk_v3_python, "-c", script, *args],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout.strip().splitlines()[-1].split()


def test_sdk_v3s_tuner_runs_a_random_search_and_names_its_best_training_job(
    stack, sagemaker, shell_algo_image, sdk_v3_python, tmp_path
):
    """tune(wait=False), wait(), best_training_job(): the tuning job ran its 3 training jobs, and
    the one it calls best has the lowest objective of them."""
    base_name = unique_name("sdk3-tuner")[:24]

    tuning_name, best_name = run_v3(
        stack, sdk_v3_python, tmp_path, TUNER_SCRIPT,
        shell_algo_image, ROLE, SCRIPT, base_name,
    )

    job = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=tuning_name)
    assert job["HyperParameterTuningJobStatus"] == "Completed", job.get("FailureReason")
    assert job["HyperParameterTuningJobConfig"]["Strategy"] == "Random"
    assert job["HyperParameterTuningJobConfig"]["ResourceLimits"] == {
        "MaxNumberOfTrainingJobs": 3, "MaxParallelTrainingJobs": 2
    }
    assert job["TrainingJobStatusCounters"] == {
        "Completed": 3, "InProgress": 0, "RetryableError": 0, "NonRetryableError": 0, "Stopped": 0
    }
    assert job["ObjectiveStatusCounters"] == {"Succeeded": 3, "Pending": 0, "Failed": 0}
    trained = sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=tuning_name
    )["TrainingJobSummaries"]
    objectives = {
        summary["TrainingJobName"]: summary["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
        for summary in trained
    }
    assert len(objectives) == 3
    assert best_name == job["BestTrainingJob"]["TrainingJobName"]
    assert objectives[best_name] == min(objectives.values())
    depth = int(job["BestTrainingJob"]["TunedHyperParameters"]["depth"])
    assert objectives[best_name] == (depth - 3) ** 2


PIPELINE_SCRIPT = textwrap.dedent("""
    import sys
    from sagemaker.core.parameter import IntegerParameter
    from sagemaker.core.workflow.pipeline_context import PipelineSession
    from sagemaker.mlops.workflow.pipeline import Pipeline
    from sagemaker.mlops.workflow.steps import TrainingStep, TuningStep
    from sagemaker.train import ModelTrainer
    from sagemaker.train.configs import Compute, MetricDefinition
    from sagemaker.train.tuner import HyperparameterTuner

    image, role, algo_script, name = sys.argv[1:5]
    session = PipelineSession()
    trainer = ModelTrainer(
        training_image=image,
        role=role,
        compute=Compute(instance_type="ml.m5.large", instance_count=1, volume_size_in_gb=1),
        environment={"ALGO_SCRIPT": algo_script},
        hyperparameters={"depth": 3},
        sagemaker_session=session,
    ).with_metric_definitions([MetricDefinition(name="validation:loss", regex=r"validation:loss=([0-9.]+)")])
    train = TrainingStep(name="Train", step_args=trainer.train())
    tuner = HyperparameterTuner(
        model_trainer=trainer,
        objective_metric_name="validation:loss",
        objective_type="Minimize",
        hyperparameter_ranges={"depth": IntegerParameter(1, 6)},
        metric_definitions=[{"Name": "validation:loss", "Regex": r"validation:loss=([0-9.]+)"}],
        strategy="Random",
        max_jobs=2,
        max_parallel_jobs=2,
    )
    tune = TuningStep(name="Tune", step_args=tuner.tune(), depends_on=[train])
    pipeline = Pipeline(name=name, steps=[train, tune], sagemaker_session=session)
    pipeline.upsert(role_arn=role)
    execution = pipeline.start()
    execution.wait(delay=2, max_attempts=150)
    print(execution.arn)
""")


def test_sdk_v3s_pipeline_trains_then_tunes_and_succeeds(
    stack, sagemaker, shell_algo_image, sdk_v3_python, tmp_path
):
    """upsert(), start(), wait(): a TrainingStep from ModelTrainer.train() and a TuningStep from
    HyperparameterTuner.tune() after it; the execution Succeeded, each step names its job, and the
    jobs ran as the definition said."""
    name = unique_name("sdk3-pipeline")

    (execution_arn,) = run_v3(
        stack, sdk_v3_python, tmp_path, PIPELINE_SCRIPT,
        shell_algo_image, ROLE, SCRIPT, name,
    )

    execution = sagemaker.describe_pipeline_execution(PipelineExecutionArn=execution_arn)
    assert execution["PipelineExecutionStatus"] == "Succeeded", execution.get("FailureReason")
    assert execution["PipelineArn"].endswith(f":pipeline/{name}")
    steps = sagemaker.list_pipeline_execution_steps(PipelineExecutionArn=execution_arn)[
        "PipelineExecutionSteps"
    ]
    by_name = {step["StepName"]: step for step in steps}
    assert set(by_name) == {"Train", "Tune"}
    assert {step["StepStatus"] for step in steps} == {"Succeeded"}
    training_arn = by_name["Train"]["Metadata"]["TrainingJob"]["Arn"]
    training = sagemaker.describe_training_job(TrainingJobName=training_arn.rsplit("/", 1)[1])
    assert training["TrainingJobStatus"] == "Completed"
    assert training["HyperParameters"]["depth"] == "3"
    metrics = [(metric["MetricName"], metric["Value"]) for metric in training["FinalMetricDataList"]]
    assert metrics == [("validation:loss", 0)]
    tuning_name = by_name["Tune"]["Metadata"]["TuningJob"]["Arn"].rsplit("/", 1)[1]
    tuning = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=tuning_name)
    assert tuning["HyperParameterTuningJobStatus"] == "Completed"
    assert tuning["TrainingJobStatusCounters"]["Completed"] == 2
    assert by_name["Tune"]["StartTime"] >= by_name["Train"]["EndTime"]
