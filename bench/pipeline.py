"""A pipeline execution's wall time against the sum of its jobs' own times: the orchestration
overhead, in one run.

The pipeline is a small MLOps chain on the quick start's example images (`make images`), defined
as the JSON the SageMaker Python SDK writes and created with stock boto3:

    Prepare (Processing, busybox: copies the raw CSV to its `train` output)
      → Train (Training, python: the linear-regression example, on Prepare's output)
      → Model-CreateModel (Model, python-serve, Train's ModelArtifacts)
      → Score (Transform with that model, SplitType Line, into a folder per execution)

Each of --runs executions (default 3) is started and DescribePipelineExecution is polled every
--poll-seconds until it ends (at most --run-timeout seconds). Its wall time is
DescribePipelineExecution's CreationTime → LastModifiedTime (when it is Succeeded). Each step's
own time is its resource's Describe: creation → end (CreationTime → ProcessingEndTime,
TrainingEndTime, TransformEndTime) and start → end (ProcessingStartTime, TrainingStartTime,
TransformStartTime → the end); a Model step is its CreateModel call, ListPipelineExecutionSteps'
StartTime → EndTime. The overhead is the wall time less the sum of the creation → end times along
the critical path (the chain here), in seconds and per step; the gaps say where it went: from the
execution's start to the first job's creation, from each job's end to the next one's creation,
and from the last end to Succeeded. Prints each run and the medians.

    make bench-pipeline [ARGS='--runs 5']

or, on a running stack:

    . .sageport/env && .venv/bin/python -m bench.pipeline [--runs 5]

Run it as a module from the repository root; the stack is found through the standard variables
(<data>/env sets them). The pipeline, its models and its bucket are removed at the end; the jobs
stay in the stack (SageMaker deletes no job).
"""

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

import boto3

try:
    from bench.common import delete_bucket
except ModuleNotFoundError:  # run as a script, the repository root is not on the path
    sys.exit("run it from the repository root as: .venv/bin/python -m bench.pipeline")

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
BUSYBOX, TRAINER, SERVER = (
    "sageport-examples/busybox:latest",
    "sageport-examples/python:latest",
    "sageport-examples/python-serve:latest",
)
TRAIN_CSV = Path(__file__).resolve().parent.parent / "examples" / "linear_regression" / "train.csv"
INSTANCE = {"InstanceType": "ml.m5.large", "InstanceCount": 1}
# Step → the steps it reads (its parents): the critical path is the longest chain through them.
PARENTS = {
    "Prepare": [], "Train": ["Prepare"], "Model-CreateModel": ["Train"], "Score": ["Model-CreateModel"],
}
# Each job step's Describe call, its name member and its start and end members.
JOBS = {
    "ProcessingJob": (
        "describe_processing_job", "ProcessingJobName", "ProcessingStartTime", "ProcessingEndTime"
    ),
    "TrainingJob": ("describe_training_job", "TrainingJobName", "TrainingStartTime", "TrainingEndTime"),
    "TransformJob": ("describe_transform_job", "TransformJobName", "TransformStartTime", "TransformEndTime"),
}
TERMINAL = ("Succeeded", "Failed", "Stopped")


def main() -> int:
    options = _arguments()
    sagemaker, s3 = boto3.client("sagemaker"), boto3.client("s3")
    name = f"bench-pipeline-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=name)
    runs, executions = [], []
    try:
        _upload_data(s3, name)
        sagemaker.create_pipeline(
            PipelineName=name, PipelineDefinition=json.dumps(definition(name)), RoleArn=ROLE
        )
        for number in range(1, options.runs + 1):
            executions.append(sagemaker.start_pipeline_execution(PipelineName=name)["PipelineExecutionArn"])
            runs.append(_run(sagemaker, executions[-1], options))
            print(_run_line(number, runs[-1]), flush=True)
    finally:
        _clean_up(sagemaker, s3, name, executions)
    print(_summary(runs, options))
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="executions, one after the other (default 3)")
    parser.add_argument("--poll-seconds", type=float, default=0.2,
                        help="DescribePipelineExecution interval (default 0.2)")
    parser.add_argument("--run-timeout", type=float, default=300.0,
                        help="seconds an execution may take to end (default 300)")
    options = parser.parse_args()
    if options.runs < 1 or options.poll_seconds <= 0:
        parser.error("--runs must be at least 1 and --poll-seconds above 0")
    return options


def _upload_data(s3, bucket: str) -> None:
    """The raw training table, and the same rows' features (the target column cut) to score."""
    rows = TRAIN_CSV.read_text().splitlines()
    s3.put_object(Bucket=bucket, Key="raw/train.csv", Body="\n".join(rows).encode() + b"\n")
    features = [row.rsplit(",", 1)[0] for row in rows]
    s3.put_object(Bucket=bucket, Key="score/features.csv", Body="\n".join(features).encode() + b"\n")


def definition(bucket: str) -> dict:
    """The pipeline as the SDK v2 writes it: ProcessingStep, TrainingStep, ModelStep(model.create())
    and TransformStep, each reading the one before through its properties."""
    per_execution = {"Get": "Execution.PipelineExecutionId"}
    return {
        "Version": "2020-12-01",
        "Metadata": {},
        "Parameters": [],
        "PipelineExperimentConfig": {
            "ExperimentName": {"Get": "Execution.PipelineName"},
            "TrialName": per_execution,
        },
        "Steps": [
            _prepare(bucket, per_execution),
            _train(bucket, per_execution),
            _model(),
            _score(bucket, per_execution),
        ],
    }


def _join(*values) -> dict:
    return {"Std:Join": {"On": "/", "Values": list(values)}}


def _prepare(bucket: str, per_execution: dict) -> dict:
    local = "/opt/ml/processing"
    return {
        "Name": "Prepare",
        "Type": "Processing",
        "Arguments": {
            "ProcessingResources": {"ClusterConfig": {**INSTANCE, "VolumeSizeInGB": 1}},
            "AppSpecification": {
                "ImageUri": BUSYBOX,
                "ContainerEntrypoint": ["sh", "-c", f"cp {local}/input/raw/*.csv {local}/train/"],
            },
            "RoleArn": ROLE,
            "ProcessingInputs": [{
                "InputName": "raw",
                "AppManaged": False,
                "S3Input": {
                    "S3Uri": f"s3://{bucket}/raw/", "LocalPath": f"{local}/input/raw",
                    "S3DataType": "S3Prefix", "S3InputMode": "File",
                    "S3DataDistributionType": "FullyReplicated",
                },
            }],
            "ProcessingOutputConfig": {"Outputs": [{
                "OutputName": "train",
                "AppManaged": False,
                "S3Output": {
                    "S3Uri": _join("s3:/", bucket, per_execution, "Prepare", "train"),
                    "LocalPath": f"{local}/train",
                    "S3UploadMode": "EndOfJob",
                },
            }]},
            "StoppingCondition": {"MaxRuntimeInSeconds": 300},
        },
    }


def _train(bucket: str, per_execution: dict) -> dict:
    return {
        "Name": "Train",
        "Type": "Training",
        "Arguments": {
            "AlgorithmSpecification": {"TrainingImage": TRAINER, "TrainingInputMode": "File"},
            "OutputDataConfig": {"S3OutputPath": _join("s3:/", bucket, per_execution, "models")},
            "StoppingCondition": {"MaxRuntimeInSeconds": 300},
            "ResourceConfig": {**INSTANCE, "VolumeSizeInGB": 1},
            "RoleArn": ROLE,
            "HyperParameters": {"l2": "0.1"},
            "InputDataConfig": [{
                "ChannelName": "train",
                "ContentType": "text/csv",
                "DataSource": {"S3DataSource": {
                    "S3DataType": "S3Prefix",
                    "S3Uri": {"Get": "Steps.Prepare.ProcessingOutputConfig.Outputs['train'].S3Output.S3Uri"},
                    "S3DataDistributionType": "FullyReplicated",
                }},
            }],
        },
    }


def _model() -> dict:
    return {
        "Name": "Model-CreateModel",
        "Type": "Model",
        "Arguments": {
            "ExecutionRoleArn": ROLE,
            "PrimaryContainer": {
                "Image": SERVER,
                "Environment": {},
                "ModelDataUrl": {"Get": "Steps.Train.ModelArtifacts.S3ModelArtifacts"},
            },
        },
    }


def _score(bucket: str, per_execution: dict) -> dict:
    return {
        "Name": "Score",
        "Type": "Transform",
        "Arguments": {
            "ModelName": {"Get": "Steps.Model-CreateModel.ModelName"},
            "TransformInput": {
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/score/"}},
                "ContentType": "text/csv",
                "SplitType": "Line",
            },
            "TransformOutput": {
                "S3OutputPath": _join("s3:/", bucket, per_execution, "scored"),
                "AssembleWith": "Line",
                "Accept": "text/csv",
            },
            "TransformResources": INSTANCE,
        },
    }


def _run(sagemaker, arn: str, options) -> dict:
    """One execution to its end: its wall time and each step's times."""
    execution = _wait(sagemaker, arn, options)
    if execution["PipelineExecutionStatus"] != "Succeeded":
        raise RuntimeError(f"{arn}: {execution['PipelineExecutionStatus']}: {execution.get('FailureReason')}")
    started = execution["CreationTime"].timestamp()
    steps = _steps(sagemaker, arn)
    times = {step["StepName"]: _step_times(sagemaker, step, started) for step in steps}
    return measure(execution["LastModifiedTime"].timestamp() - started, times)


def _steps(sagemaker, arn: str) -> list[dict]:
    return sagemaker.list_pipeline_execution_steps(PipelineExecutionArn=arn)["PipelineExecutionSteps"]


def _wait(sagemaker, arn: str, options) -> dict:
    deadline = time.monotonic() + options.run_timeout
    while time.monotonic() < deadline:
        execution = sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)
        if execution["PipelineExecutionStatus"] in TERMINAL:
            return execution
        time.sleep(options.poll_seconds)
    sagemaker.stop_pipeline_execution(PipelineExecutionArn=arn)
    raise RuntimeError(f"{arn} did not end within {options.run_timeout:g} s (stopped)")


def _step_times(sagemaker, step: dict, started: float) -> dict:
    """Seconds after the execution's start: the resource's creation, its start and its end."""
    metadata = step.get("Metadata", {})
    kind = next((kind for kind in JOBS if kind in metadata), None)
    if kind is None:  # a Model step: its CreateModel call is the whole of it
        began = step["StartTime"].timestamp() - started
        return {"created": began, "began": began, "ended": step["EndTime"].timestamp() - started}
    operation, member, start, end = JOBS[kind]
    job = getattr(sagemaker, operation)(**{member: metadata[kind]["Arn"].split("/")[-1]})
    return {
        "created": job["CreationTime"].timestamp() - started,
        "began": job[start].timestamp() - started,
        "ended": job[end].timestamp() - started,
    }


def measure(wall: float, times: dict[str, dict]) -> dict:
    """A run's figures from its wall time and each step's creation, start and end (seconds after
    the execution's start): own times, the critical path's sums, the overhead and its gaps."""
    own = {name: t["ended"] - t["created"] for name, t in times.items()}
    running = {name: t["ended"] - t["began"] for name, t in times.items()}
    path = critical_path(own, PARENTS)
    path_own = sum(own[name] for name in path)
    return {
        "wall": wall,
        "own": own,
        "running": running,
        "path": path,
        "path_own": path_own,
        "path_running": sum(running[name] for name in path),
        "overhead": wall - path_own,
        "per_step": (wall - path_own) / len(path),
        "gaps": gaps(wall, path, times),
    }


def critical_path(seconds: dict[str, float], parents: dict[str, list[str]]) -> list[str]:
    """The chain of steps, each reading the one before, whose seconds add up the most."""
    longest: dict[str, tuple[float, list[str]]] = {}

    def through(name: str) -> tuple[float, list[str]]:
        if name not in longest:
            before = max((through(parent) for parent in parents[name]), default=(0.0, []))
            longest[name] = (before[0] + seconds[name], before[1] + [name])
        return longest[name]

    return max((through(name) for name in seconds), key=lambda found: found[0])[1]


def gaps(wall: float, path: list[str], times: dict[str, dict]) -> dict[str, float]:
    """Where the overhead went along the path: before each step's resource was made (after the
    execution's start, or the step before's end), and after the last one's end."""
    found, previous_end = {}, 0.0
    for name in path:
        found[f"→ {name}"] = times[name]["created"] - previous_end
        previous_end = times[name]["ended"]
    found["→ Succeeded"] = wall - previous_end
    return found


def _run_line(number: int, run: dict) -> str:
    steps = ", ".join(f"{name} {run['own'][name]:.2f} ({run['running'][name]:.2f})" for name in run["path"])
    handoffs = ", ".join(f"{name} {seconds:.2f}" for name, seconds in run["gaps"].items())
    return (
        f"run {number}: wall {run['wall']:.2f} s; jobs, creation→end (start→end): {steps}; "
        f"critical path {run['path_own']:.2f} s ({run['path_running']:.2f}); "
        f"overhead {run['overhead']:.2f} s = {run['per_step']:.2f} s/step; gaps: {handoffs}"
    )


def _summary(runs: list[dict], options) -> str:
    def median(key: str) -> float:
        return statistics.median(run[key] for run in runs)

    path = runs[0]["path"]
    gap_medians = {name: statistics.median(run["gaps"][name] for run in runs) for name in runs[0]["gaps"]}
    lines = [f"{len(runs)} executions of {' → '.join(path)}, DescribePipelineExecution every "
             f"{options.poll_seconds:g} s; medians:"]
    lines += [f"  wall (CreationTime → Succeeded)      {median('wall'):7.2f} s",
              f"  critical path, jobs creation → end  {median('path_own'):7.2f} s",
              f"  critical path, jobs start → end     {median('path_running'):7.2f} s",
              f"  overhead (wall − creation → end)    {median('overhead'):7.2f} s "
              f"({median('per_step'):.2f} s per step)"]
    lines += [f"  gap {name:<32}{seconds:7.2f} s" for name, seconds in gap_medians.items()]
    lines.append(f"summary: pipeline wall {median('wall'):.2f} s against {median('path_own'):.2f} s of its "
                 f"jobs' own times: overhead {median('overhead'):.2f} s, {median('per_step'):.2f} s per step "
                 f"({median('overhead') / median('wall'):.0%} of the wall time)")
    return "\n".join(lines)


def _clean_up(sagemaker, s3, pipeline: str, executions: list[str]) -> None:
    """The models the executions made, the pipeline and the bucket; a failure is only reported."""
    try:
        for arn in executions:
            for step in _steps(sagemaker, arn):
                if "Model" in step.get("Metadata", {}):
                    sagemaker.delete_model(ModelName=step["Metadata"]["Model"]["Arn"].split("/")[-1])
    except Exception as error:  # never hide the measurement behind a cleanup problem
        print(f"warning: could not delete the executions' models: {error}", file=sys.stderr)
    try:
        sagemaker.delete_pipeline(PipelineName=pipeline, ClientRequestToken=uuid.uuid4().hex)
    except Exception as error:
        print(f"warning: could not delete pipeline {pipeline}: {error}", file=sys.stderr)
    delete_bucket(s3, pipeline)


if __name__ == "__main__":
    sys.exit(main())
