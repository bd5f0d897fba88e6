"""The Hyperband strategy and warm start, through the SageMaker SDK v2's HyperparameterTuner as its
documentation shows them, on the shell image.

AWS behaviour checked: a Hyperband search (StrategyConfig.HyperbandStrategyConfig; MaxResource the
most objective values a training job reports) stops a training job that reports a worse objective
than the earlier ones at MinResource: it shows TrainingJobStatus Stopped, its last value as its
objective (ObjectiveStatus Succeeded) and is counted among TrainingJobStatusCounters' Stopped. A
warm start (WarmStartConfig IdenticalDataAndAlgorithm) from it reports OverallBestTrainingJob, the
best of its own and its parent's training jobs, and counts only its own training jobs. Parents
that cannot seed a warm start are refused with a ValidationException at create."""
import pytest

from tests.e2e.conftest import unique_name
from tests.e2e.test_tuning_jobs import tuning_request, wait_for_tuning

# The first training job reports a good objective at each of its two epochs and ends; the others
# report a bad one at the first epoch and would take two minutes to report the second: Hyperband
# stops them (SIGTERM ends the wait at once).
EPOCHS_SCRIPT = (
    'case "$TRAINING_JOB_NAME" in '
    "*-001-*) echo validation:loss=1; echo validation:loss=0.5;; "
    "*) echo validation:loss=5; trap 'exit 0' TERM; sleep 120 & wait; echo validation:loss=4;; esac"
)
LINGERS = "trap 'exit 0' TERM; sleep 300 & wait"
OTHER_ACCOUNT = "555566667777"
METRICS = [{"Name": "validation:loss", "Regex": r"validation:loss=([0-9.]+)"}]


def tuner(sdk_session, bucket, image, script, **options):
    from sagemaker.estimator import Estimator
    from sagemaker.tuner import HyperparameterTuner, IntegerParameter

    from tests.e2e.sdk import ROLE

    estimator = Estimator(
        image_uri=image, role=ROLE, instance_count=1, instance_type="ml.m5.large",
        output_path=f"s3://{bucket}/sdk-tuning", environment={"ALGO_SCRIPT": script},
        hyperparameters={"epochs": "2"}, sagemaker_session=sdk_session,
    )
    return HyperparameterTuner(
        estimator, objective_metric_name="validation:loss", objective_type="Minimize",
        hyperparameter_ranges={"depth": IntegerParameter(1, 6)}, metric_definitions=METRICS,
        max_parallel_jobs=1, **options,
    )


def test_hyperband_stops_the_under_performing_and_a_warm_start_reports_the_overall_best(
    sdk_session, sagemaker, bucket, shell_algo_image
):
    from sagemaker.tuner import HyperbandStrategyConfig, StrategyConfig, WarmStartConfig, WarmStartTypes

    hyperband = tuner(
        sdk_session, bucket, shell_algo_image, EPOCHS_SCRIPT, strategy="Hyperband", max_jobs=3,
        strategy_config=StrategyConfig(HyperbandStrategyConfig(max_resource=2, min_resource=1)),
        base_tuning_job_name="hyperband",
    )
    hyperband.fit(wait=True)

    parent = hyperband.latest_tuning_job.name
    job = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=parent)
    assert job["HyperParameterTuningJobStatus"] == "Completed", job.get("FailureReason")
    assert job["HyperParameterTuningJobConfig"]["StrategyConfig"] == {
        "HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": 2}
    }
    assert job["ObjectiveStatusCounters"] == {"Succeeded": 3, "Pending": 0, "Failed": 0}
    assert job["TrainingJobStatusCounters"]["Stopped"] >= 2  # the first may be stopped at MaxResource
    assert job["BestTrainingJob"]["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] == 0.5
    summaries = sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=parent, SortBy="CreationTime", SortOrder="Ascending"
    )["TrainingJobSummaries"]
    assert [s["TrainingJobStatus"] for s in summaries[1:]] == ["Stopped", "Stopped"]
    assert [s["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for s in summaries[1:]] == [5.0, 5.0]
    assert all(s["ObjectiveStatus"] == "Succeeded" for s in summaries)

    # Its child's training job reports 1.5 at best: the parent's first (0.5) stays the overall best.
    child = tuner(
        sdk_session, bucket, shell_algo_image, "echo validation:loss=2; echo validation:loss=1.5",
        max_jobs=1, base_tuning_job_name="warm",
        warm_start_config=WarmStartConfig(WarmStartTypes.IDENTICAL_DATA_AND_ALGORITHM, parents={parent}),
    )
    child.fit(wait=True)

    name = child.latest_tuning_job.name
    answer = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    assert answer["HyperParameterTuningJobStatus"] == "Completed", answer.get("FailureReason")
    assert answer["WarmStartConfig"] == {
        "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": parent}],
        "WarmStartType": "IdenticalDataAndAlgorithm",
    }
    assert answer["TrainingJobStatusCounters"]["Completed"] == 1
    assert answer["BestTrainingJob"]["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] == 1.5
    assert answer["OverallBestTrainingJob"]["TuningJobName"] == parent
    assert answer["OverallBestTrainingJob"]["TrainingJobName"] == summaries[0]["TrainingJobName"]


def warm(*parents: str) -> dict:
    return {
        "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": name} for name in parents],
        "WarmStartType": "TransferLearning",
    }


def test_parents_that_cannot_seed_a_warm_start_are_refused_at_create(
    stack, sagemaker, bucket, shell_algo_image
):
    config = {
        "Strategy": "Bayesian",
        "ResourceLimits": {"MaxNumberOfTrainingJobs": 1, "MaxParallelTrainingJobs": 1},
        "ParameterRanges": {"IntegerParameterRanges": [{"Name": "depth", "MinValue": "1", "MaxValue": "6"}]},
    }
    running = unique_name("running")
    sagemaker.create_hyper_parameter_tuning_job(
        **tuning_request(running, shell_algo_image, bucket, config, script=LINGERS)
    )
    cases = [
        (warm("nobody-here"), "The parent hyperparameter tuning job nobody-here does not exist."),
        (warm(running), f"The parent hyperparameter tuning job {running} is InProgress"),
        (warm(*[running] * 6), "less than or equal to 5"),
    ]
    for warm_start, message in cases:
        name = unique_name("child")
        request = {**tuning_request(name, shell_algo_image, bucket, config), "WarmStartConfig": warm_start}
        with pytest.raises(sagemaker.exceptions.ClientError) as refused:
            sagemaker.create_hyper_parameter_tuning_job(**request)
        assert refused.value.response["Error"]["Code"] == "ValidationException"
        assert message in refused.value.response["Error"]["Message"]
    # Another account names it as it would its own: as unknown to it as a name nobody used.
    key_id, secret = stack.create_access_key(OTHER_ACCOUNT)
    keys = {"aws_access_key_id": key_id, "aws_secret_access_key": secret}
    other, other_s3 = stack.client("sagemaker", **keys), stack.client("s3", **keys)
    their_bucket = unique_name("theirs")
    other_s3.create_bucket(Bucket=their_bucket)
    request = tuning_request(unique_name("theirs"), shell_algo_image, their_bucket, config)
    request["WarmStartConfig"] = warm(running)
    request["TrainingJobDefinition"]["RoleArn"] = f"arn:aws:iam::{OTHER_ACCOUNT}:role/SageMakerRole"
    with pytest.raises(other.exceptions.ClientError) as refused:
        other.create_hyper_parameter_tuning_job(**request)
    other_s3.delete_bucket(Bucket=their_bucket)
    stack.delete_access_key(key_id)
    assert refused.value.response["Error"]["Message"] == (
        f"The parent hyperparameter tuning job {running} does not exist."
    )
    sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=running)
    assert wait_for_tuning(sagemaker, running)["HyperParameterTuningJobStatus"] == "Stopped"
