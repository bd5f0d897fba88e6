"""Tuning jobs over several training job definitions, and completion criteria, on the shell image
(each training job prints `validation:loss=(depth - 3)^2`, tests/e2e/test_tuning_jobs.py's SCRIPT).

AWS behaviour checked: SDK v2's multi-algorithm tuner (`HyperparameterTuner.create(estimator_dict=
..., objective_metric_name_dict=..., hyperparameter_ranges_dict=...)`, `fit(inputs={name: ...})`,
`best_training_job()`, `analytics().dataframe()`) runs unchanged; each training job's
HyperParameterTrainingJobSummary names its TrainingJobDefinitionName (botocore's shape), as does
BestTrainingJob; TuningJobCompletionCriteria's BestObjectiveNotImproving stops launching once that
many training jobs did not improve the best, the tuning job Completed, with
TuningJobCompletionDetails.NumberOfTrainingJobsObjectiveNotImproving."""
from tests.e2e.conftest import unique_name
from tests.e2e.test_tuning_jobs import SCRIPT, tuning_request, wait_for_tuning

LOSS = [{"Name": "validation:loss", "Regex": r"validation:loss=([0-9.]+)"}]


def multi_tuner(image: str, bucket: str, session):
    """Two estimators of the shell image, `shallow` searching depth 1 and 2, `deep` 3 and 5, each
    its own Grid (4 training jobs in all); the best is deep's depth 3 (loss 0)."""
    from sagemaker.estimator import Estimator
    from sagemaker.tuner import CategoricalParameter, HyperparameterTuner

    from tests.e2e.sdk import ROLE

    def estimator(epochs: str) -> Estimator:
        return Estimator(
            image_uri=image, role=ROLE, instance_count=1, instance_type="ml.m5.large",
            output_path=f"s3://{bucket}/multi-out", environment={"ALGO_SCRIPT": SCRIPT},
            hyperparameters={"epochs": epochs}, sagemaker_session=session,
        )

    return HyperparameterTuner.create(
        estimator_dict={"shallow": estimator("1"), "deep": estimator("2")},
        objective_metric_name_dict={"shallow": "validation:loss", "deep": "validation:loss"},
        hyperparameter_ranges_dict={
            "shallow": {"depth": CategoricalParameter(["1", "2"])},
            "deep": {"depth": CategoricalParameter(["3", "5"])},
        },
        metric_definitions_dict={"shallow": LOSS, "deep": LOSS},
        objective_type="Minimize",
        strategy="Grid",
        max_jobs=4,
        max_parallel_jobs=2,
        base_tuning_job_name="sdk-multi",
    )


# With an estimator_dict the SDK's fit wants inputs and include_cls_metadata per estimator.
NO_CLS_METADATA = {"shallow": False, "deep": False}


def test_the_sdks_multi_algorithm_tuner_runs_each_definitions_grid_and_names_the_best_definition(
    sdk_session, sagemaker, s3, bucket, shell_algo_image
):
    s3.put_object(Bucket=bucket, Key="multi/in/data.txt", Body=b"rows")
    tuner = multi_tuner(shell_algo_image, bucket, sdk_session)

    data = f"s3://{bucket}/multi/in"
    tuner.fit(inputs={"shallow": data, "deep": data}, include_cls_metadata=NO_CLS_METADATA, wait=True)

    name = tuner.latest_tuning_job.name
    job = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
    assert job["HyperParameterTuningJobStatus"] == "Completed", job.get("FailureReason")
    assert sorted(d["DefinitionName"] for d in job["TrainingJobDefinitions"]) == ["deep", "shallow"]
    summaries = sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(
        HyperParameterTuningJobName=name, SortBy="Name", SortOrder="Ascending"
    )["TrainingJobSummaries"]
    assert job["TrainingJobStatusCounters"]["Completed"] == 4, [s.get("FailureReason") for s in summaries]
    assert job["BestTrainingJob"]["TrainingJobDefinitionName"] == "deep"
    assert job["BestTrainingJob"]["TunedHyperParameters"] == {"depth": "3"}
    by_definition = {(s["TrainingJobDefinitionName"], s["TunedHyperParameters"]["depth"]) for s in summaries}
    assert by_definition == {("shallow", "1"), ("shallow", "2"), ("deep", "3"), ("deep", "5")}
    deep_job = sagemaker.describe_training_job(TrainingJobName=job["BestTrainingJob"]["TrainingJobName"])
    assert deep_job["HyperParameters"]["epochs"] == "2"
    assert deep_job["TuningJobArn"] == job["HyperParameterTuningJobArn"]

    assert tuner.best_training_job() == job["BestTrainingJob"]["TrainingJobName"]
    frame = tuner.analytics().dataframe()
    assert len(frame) == 4
    best = frame.sort_values("FinalObjectiveValue").iloc[0]
    assert best["TrainingJobDefinitionName"] == "deep" and best["FinalObjectiveValue"] == 0


def test_a_search_whose_training_jobs_stop_improving_completes_before_its_budget(
    sagemaker, bucket, shell_algo_image
):
    """Grid order is the values' order: depth 3 (loss 0) first, then three that do not improve it;
    the fifth combination is never launched."""
    name = unique_name("patience")
    config = {
        "Strategy": "Grid",
        "ResourceLimits": {"MaxParallelTrainingJobs": 1},
        "ParameterRanges": {
            "CategoricalParameterRanges": [{"Name": "depth", "Values": ["3", "1", "2", "5", "6"]}],
        },
        "TuningJobCompletionCriteria": {
            "BestObjectiveNotImproving": {"MaxNumberOfTrainingJobsNotImproving": 3},
        },
    }
    sagemaker.create_hyper_parameter_tuning_job(**tuning_request(name, shell_algo_image, bucket, config))
    job = wait_for_tuning(sagemaker, name, timeout=240)

    assert job["HyperParameterTuningJobStatus"] == "Completed", job.get("FailureReason")
    assert job["TrainingJobStatusCounters"]["Completed"] == 4
    assert job["TuningJobCompletionDetails"] == {"NumberOfTrainingJobsObjectiveNotImproving": 3}
    assert job["BestTrainingJob"]["TunedHyperParameters"] == {"depth": "3"}
    criteria = job["HyperParameterTuningJobConfig"]["TuningJobCompletionCriteria"]
    assert criteria == config["TuningJobCompletionCriteria"]


def test_a_pipelines_tuning_step_runs_the_multi_algorithm_tuner(
    sdk_session, sagemaker, s3, bucket, shell_algo_image
):
    """TuningStep(step_args=tuner.fit(...)) of the same tuner: the step's tuning job has both
    definitions and its best training job is deep's."""
    from sagemaker.workflow.pipeline import Pipeline
    from sagemaker.workflow.pipeline_context import PipelineSession
    from sagemaker.workflow.steps import TuningStep

    from tests.e2e.sdk import ROLE

    session = PipelineSession(
        boto_session=sdk_session.boto_session, sagemaker_client=sdk_session.sagemaker_client
    )
    s3.put_object(Bucket=bucket, Key="multi/in/data.txt", Body=b"rows")
    data = f"s3://{bucket}/multi/in"
    tuner = multi_tuner(shell_algo_image, bucket, session)
    step = TuningStep(
        name="TuneBoth",
        step_args=tuner.fit(inputs={"shallow": data, "deep": data}, include_cls_metadata=NO_CLS_METADATA),
    )
    pipeline = Pipeline(name=unique_name("multitune"), steps=[step], sagemaker_session=session)
    pipeline.upsert(role_arn=ROLE)
    execution = pipeline.start()
    execution.wait(delay=1, max_attempts=240)

    described = execution.describe()
    assert described["PipelineExecutionStatus"] == "Succeeded", described.get("FailureReason")
    [listed] = execution.list_steps()
    arn = listed["Metadata"]["TuningJob"]["Arn"]
    job = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=arn.rsplit("/", 1)[1])
    assert sorted(d["DefinitionName"] for d in job["TrainingJobDefinitions"]) == ["deep", "shallow"]
    assert job["BestTrainingJob"]["TrainingJobDefinitionName"] == "deep"
    pipeline.delete()
