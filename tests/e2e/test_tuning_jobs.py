"""Hyperparameter tuning jobs running real training jobs on the shell image: each training job
reads its hyperparameters from /opt/ml/input/config/hyperparameters.json and prints an objective
computed from them, which its MetricDefinitions read.

AWS behaviour checked: CreateHyperParameterTuningJob / Describe / List / Stop and
ListTrainingJobsForHyperParameterTuningJob shapes (botocore's sagemaker model); training jobs
named `<tuning job>-NNN-<8 hex>` with DescribeTrainingJob's TuningJobArn and the tuning job's tags
("Tags that you specify for the tuning job are also added to all training jobs that the tuning
job launches": the Tags member's documentation); Grid search runs every combination of the
categorical values once (automatic-model-tuning-how-it-works); MaxParallelTrainingJobs bounds
the training jobs running at once; sorting by FinalObjectiveMetricValue."""
import re
import threading
import time
from contextlib import contextmanager

import docker
import pytest

from tests.e2e.conftest import unique_name

OBJECTIVE = {"Type": "Minimize", "MetricName": "validation:loss"}
# (depth - 3)^2, printed as the objective: best at depth 3.
SCRIPT = (
    "d=$(sed -n 's/.*\"depth\": *\"\\([^\"]*\\)\".*/\\1/p' /opt/ml/input/config/hyperparameters.json); "
    "awk -v d=\"$d\" 'BEGIN{printf \"validation:loss=%f\\n\", (d-3)*(d-3)}'"
)
TERMINAL = {"Completed", "Failed", "Stopped"}


def tuning_request(name: str, image: str, bucket: str, config: dict, script: str = SCRIPT) -> dict:
    return {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {"HyperParameterTuningJobObjective": OBJECTIVE, **config},
        "TrainingJobDefinition": {
            "StaticHyperParameters": {"epochs": "1"},
            "AlgorithmSpecification": {
                "TrainingImage": image,
                "TrainingInputMode": "File",
                "MetricDefinitions": [{"Name": "validation:loss", "Regex": r"validation:loss=([0-9.]+)"}],
            },
            "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
            "OutputDataConfig": {"S3OutputPath": f"s3://{bucket}/tuning"},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 600},
            "Environment": {"ALGO_SCRIPT": script},
        },
        "Tags": [{"Key": "team", "Value": "search"}],
    }


def wait_for_tuning(sagemaker, name: str, statuses=TERMINAL, timeout: float = 180.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        if job["HyperParameterTuningJobStatus"] in statuses:
            return job
        assert time.monotonic() < deadline, f"{name} still {job['HyperParameterTuningJobStatus']}"
        time.sleep(0.3)


def most_at_once(jobs: list[dict]) -> int:
    """The most training jobs alive at one moment, each from its creation to its end."""
    starts = [(job["CreationTime"], 1) for job in jobs]
    moments = sorted(starts + [(job["TrainingEndTime"], -1) for job in jobs])
    alive = most = 0
    for _, change in moments:
        alive += change
        most = max(most, alive)
    return most


@contextmanager
def engine_watch(name: str):
    """The most training containers of the tuning job `name` running at once on the engine, seen
    by polling it while the block runs (the list holds the count once the block ends)."""
    engine, seen, done = docker.from_env(), [0], threading.Event()

    def watch():
        while not done.is_set():
            running = engine.containers.list(filters={"label": "sageport.role=train"})
            ours = [c for c in running if f"training-job/{name}-" in c.labels.get("sageport.resource", "")]
            seen[0] = max(seen[0], len(ours))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        done.set()
        watcher.join()


def training_container(training_job_arn: str, timeout: float = 60.0):
    """The engine's container of a training job (running or ended), once its worker created it."""
    engine, deadline = docker.from_env(), time.monotonic() + timeout
    selector = {"label": ["sageport.role=train", f"sageport.resource={training_job_arn}"]}
    while not (found := engine.containers.list(all=True, filters=selector)):
        assert time.monotonic() < deadline, f"no container of {training_job_arn} within {timeout}s"
        time.sleep(0.1)
    return found[0]


def test_a_grid_search_runs_every_combination_at_most_two_at_once_and_finds_the_best(
    sagemaker, bucket, shell_algo_image
):
    name = unique_name("grid")
    config = {
        "Strategy": "Grid",
        "ResourceLimits": {"MaxParallelTrainingJobs": 2},
        "ParameterRanges": {
            "CategoricalParameterRanges": [{"Name": "depth", "Values": ["1", "2", "3", "6"]}],
        },
    }
    request = tuning_request(name, shell_algo_image, bucket, config, script=f"sleep 2; {SCRIPT}")
    with engine_watch(name) as most_running:
        arn = sagemaker.create_hyper_parameter_tuning_job(**request)["HyperParameterTuningJobArn"]
        job = wait_for_tuning(sagemaker, name)

    assert job["HyperParameterTuningJobStatus"] == "Completed", job.get("FailureReason")
    assert job["TrainingJobStatusCounters"] == {
        "Completed": 4, "InProgress": 0, "RetryableError": 0, "NonRetryableError": 0, "Stopped": 0,
    }
    assert job["ObjectiveStatusCounters"] == {"Succeeded": 4, "Pending": 0, "Failed": 0}
    best = job["BestTrainingJob"]
    assert best["TunedHyperParameters"] == {"depth": "3"}
    assert best["FinalHyperParameterTuningJobObjectiveMetric"] == {**OBJECTIVE, "Value": 0.0}
    summaries = sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name, SortBy="FinalObjectiveMetricValue", SortOrder="Ascending"
    )["TrainingJobSummaries"]
    assert [summary["TunedHyperParameters"]["depth"] for summary in summaries] == ["3", "2", "1", "6"]
    assert summaries[0]["TrainingJobName"] == best["TrainingJobName"]
    trainings = [sagemaker.describe_training_job(TrainingJobName=s["TrainingJobName"]) for s in summaries]
    for training in trainings:
        assert re.fullmatch(rf"{name}-00[1-4]-[0-9a-f]{{8}}", training["TrainingJobName"])
        assert training["TuningJobArn"] == arn
        assert training["HyperParameters"]["epochs"] == "1"
        assert training["HyperParameters"]["_tuning_objective_metric"] == "validation:loss"
        tags = sagemaker.list_tags(ResourceArn=training["TrainingJobArn"])["Tags"]
        assert {"Key": "team", "Value": "search"} in tags
    assert most_at_once(trainings) <= 2
    assert most_running[0] == 2  # two at once, seen on the engine, and never more
    listed = sagemaker.list_hyper_parameter_tuning_jobs(NameContains=name)["HyperParameterTuningJobSummaries"]
    assert [(s["HyperParameterTuningJobName"], s["Strategy"]) for s in listed] == [(name, "Grid")]


def test_stopping_a_random_search_stops_its_running_training_jobs_and_launches_no_more(
    sagemaker, bucket, shell_algo_image
):
    name = unique_name("stop")
    config = {
        "Strategy": "Random",
        "RandomSeed": 7,
        "ResourceLimits": {"MaxNumberOfTrainingJobs": 4, "MaxParallelTrainingJobs": 2},
        "ParameterRanges": {"IntegerParameterRanges": [{"Name": "depth", "MinValue": "1", "MaxValue": "9"}]},
    }
    request = tuning_request(name, shell_algo_image, bucket, config, script="sleep 300")
    sagemaker.create_hyper_parameter_tuning_job(**request)
    deadline = time.monotonic() + 60
    while sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)[
        "TrainingJobStatusCounters"
    ]["InProgress"] < 2:
        assert time.monotonic() < deadline
        time.sleep(0.3)

    sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    job = wait_for_tuning(sagemaker, name)

    assert job["HyperParameterTuningJobStatus"] == "Stopped"
    assert job["TrainingJobStatusCounters"]["Stopped"] == 2
    assert sum(job["TrainingJobStatusCounters"].values()) == 2
    assert "BestTrainingJob" not in job
    summaries = sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)[
        "TrainingJobSummaries"
    ]
    assert sorted(s["TrainingJobStatus"] for s in summaries) == ["Stopped", "Stopped"]
    for summary in summaries:
        assert 1 <= int(summary["TunedHyperParameters"]["depth"]) <= 9


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"Strategy": "Hyperband", "TrainingJobEarlyStoppingType": "Auto"},
            "TrainingJobEarlyStoppingType must be Off with the Hyperband strategy",
        ),
        (
            {"Strategy": "Grid", "ParameterRanges": {"IntegerParameterRanges": [
                {"Name": "depth", "MinValue": "1", "MaxValue": "3"}]}},
            "The Grid strategy supports only categorical hyperparameter ranges; not: depth.",
        ),
        (
            {"HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "accuracy"}},
            "The objective metric 'accuracy' must be one of the training job definition's",
        ),
    ],
)
def test_a_search_sageport_cannot_run_is_refused_at_create(
    sagemaker, bucket, shell_algo_image, change, message
):
    name = unique_name("bad")
    config = {
        "Strategy": "Random",
        "ResourceLimits": {"MaxNumberOfTrainingJobs": 2, "MaxParallelTrainingJobs": 1},
        "ParameterRanges": {"CategoricalParameterRanges": [{"Name": "depth", "Values": ["1"]}]},
        **change,
    }
    with pytest.raises(sagemaker.exceptions.ClientError) as refused:
        sagemaker.create_hyper_parameter_tuning_job(**tuning_request(name, shell_algo_image, bucket, config))
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert message in refused.value.response["Error"]["Message"]
    with pytest.raises(sagemaker.exceptions.ClientError) as missing:
        sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    assert missing.value.response["Error"]["Code"] == "ResourceNotFound"


def test_the_sdks_tuner_fits_a_bayesian_search_and_names_its_best_training_job(
    sdk_session, sagemaker, bucket, shell_algo_image
):
    """SDK v2's HyperparameterTuner as its documentation shows it, with its default strategy
    (Bayesian): fit(wait=True), best_training_job(), analytics().dataframe(), attach()."""
    from sagemaker.estimator import Estimator
    from sagemaker.tuner import HyperparameterTuner, IntegerParameter

    from tests.e2e.sdk import ROLE

    estimator = Estimator(
        image_uri=shell_algo_image, role=ROLE, instance_count=1, instance_type="ml.m5.large",
        output_path=f"s3://{bucket}/sdk-tuning", environment={"ALGO_SCRIPT": SCRIPT},
        sagemaker_session=sdk_session,
    )
    tuner = HyperparameterTuner(
        estimator,
        objective_metric_name="validation:loss",
        objective_type="Minimize",
        hyperparameter_ranges={"depth": IntegerParameter(1, 6)},
        metric_definitions=[{"Name": "validation:loss", "Regex": r"validation:loss=([0-9.]+)"}],
        max_jobs=3,
        max_parallel_jobs=2,
        base_tuning_job_name="sdk-tuner",
    )

    tuner.fit(wait=True)

    name = tuner.latest_tuning_job.name
    job = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    assert job["HyperParameterTuningJobStatus"] == "Completed", job.get("FailureReason")
    assert job["HyperParameterTuningJobConfig"]["Strategy"] == "Bayesian"
    assert job["TrainingJobStatusCounters"]["Completed"] == 3
    frame = tuner.analytics().dataframe()
    assert len(frame) == 3
    best = frame.sort_values("FinalObjectiveValue").iloc[0]
    assert tuner.best_training_job() == best["TrainingJobName"]
    assert best["FinalObjectiveValue"] == (int(best["depth"]) - 3) ** 2
    attached = HyperparameterTuner.attach(name, sagemaker_session=sdk_session)
    assert attached.best_training_job() == best["TrainingJobName"]
    assert attached.estimator.image_uri == shell_algo_image


# The first training job (`<tuning job>-001-<hex>`) runs 3 s, so that the worker is killed while
# its container runs; the others need not.
FIRST_JOB_LINGERS = 'case "$TRAINING_JOB_NAME" in *-001-*) sleep 3;; esac; '


def test_a_worker_killed_mid_search_loses_and_repeats_no_training_job(
    stack, sagemaker, bucket, shell_algo_image
):
    """The search state is the database's: a worker restart finishes the search with exactly
    MaxNumberOfTrainingJobs training jobs, the first one's hyperparameters kept."""
    name = unique_name("crash")
    config = {
        "Strategy": "Random",
        "ResourceLimits": {"MaxNumberOfTrainingJobs": 3, "MaxParallelTrainingJobs": 1},
        "ParameterRanges": {"IntegerParameterRanges": [{"Name": "depth", "MinValue": "1", "MaxValue": "6"}]},
    }
    sagemaker.create_hyper_parameter_tuning_job(
        **tuning_request(name, shell_algo_image, bucket, config, script=FIRST_JOB_LINGERS + SCRIPT)
    )
    deadline = time.monotonic() + 60
    while not (first := sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name
    )["TrainingJobSummaries"]):
        assert time.monotonic() < deadline
        time.sleep(0.3)

    container = training_container(first[0]["TrainingJobArn"])
    stack.kill_worker()
    try:
        container.wait(timeout=60)  # the first training job's container ends while no worker watches
    finally:
        stack.start_worker()
    job = wait_for_tuning(sagemaker, name, timeout=300)

    assert job["HyperParameterTuningJobStatus"] == "Completed", job.get("FailureReason")
    assert job["TrainingJobStatusCounters"]["Completed"] == 3
    summaries = sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name, SortBy="CreationTime"
    )["TrainingJobSummaries"]
    assert [s["TrainingJobName"][len(name) + 1:len(name) + 4] for s in summaries] == ["001", "002", "003"]
    assert summaries[0]["TunedHyperParameters"] == first[0]["TunedHyperParameters"]
    trainings = [sagemaker.describe_training_job(TrainingJobName=s["TrainingJobName"]) for s in summaries]
    assert most_at_once(trainings) == 1
