"""A Tuning step over real rows: the hyperparameter tuning job is made by the tuning feature's own
handler and searched by its reconciler; the step's properties are the DescribeHyperParameterTuningJob
answer and ListTrainingJobsForHyperParameterTuningJob's TrainingJobSummaries, the best first (the
SDK's TuningStep.properties shapes; get_top_model_s3_uri reads TrainingJobSummaries[0])."""

import pytest
from django.utils import timezone

from logs import metrics as metric_store
from pipelines import definition
from protocol.errors import ValidationException
from tests.unit.pipelines import sample
from tests.unit.pipelines.test_reconciler import look, report, start  # noqa: F401
from training import metrics as training_metrics
from training.models import TrainingJob
from tuning import reconciler as tuning_reconciler
from tuning.models import HyperParameterTuningJob

TUNE = {
    "Name": "Tune",
    "Type": "Tuning",
    "Arguments": {
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "RandomSeed": 3,
            "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "loss"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 2, "MaxParallelTrainingJobs": 2},
            "ParameterRanges": {
                "ContinuousParameterRanges": [{"Name": "lr", "MinValue": "0", "MaxValue": "1"}]
            },
        },
        "TrainingJobDefinition": {
            "AlgorithmSpecification": {
                "TrainingImage": "algo:1",
                "TrainingInputMode": "File",
                "MetricDefinitions": [{"Name": "loss", "Regex": "loss=([0-9.]+)"}],
            },
            "RoleArn": sample.ROLE,
            "OutputDataConfig": {"S3OutputPath": "s3://bkt/tuned"},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 60},
        },
    },
}
BEST_MODEL = {
    "Name": "BestModel",
    "Type": "Model",
    "Arguments": {
        "ExecutionRoleArn": sample.ROLE,
        "PrimaryContainer": {
            "Image": "serve:1",
            "Environment": {"BEST": {"Get": "Steps.Tune.BestTrainingJob.TrainingJobName"}},
            "ModelDataUrl": {
                "Std:Join": {
                    "On": "/",
                    "Values": [
                        "s3://bkt/tuned",
                        {"Get": "Steps.Tune.TrainingJobSummaries[0].TrainingJobName"},
                        "output/model.tar.gz",
                    ],
                }
            },
        },
    },
}


def search(tuning_job: HyperParameterTuningJob) -> None:
    HyperParameterTuningJob.objects.filter(pk=tuning_job.pk).update(next_check_at=None)
    tuning_reconciler.reconcile(tuning_job.pk)


def test_a_tuning_step_runs_a_search_and_the_next_step_reads_its_best_training_job(report):  # noqa: F811
    execution = start(steps=[TUNE, BEST_MODEL])
    found = look(execution)
    tuning_job = HyperParameterTuningJob.objects.get()
    assert found["Tune"]["StepStatus"] == "Executing"
    assert found["Tune"]["Metadata"] == {"TuningJob": {"Arn": tuning_job.arn}}
    assert tuning_job.name.startswith(f"pipelines-{execution.execution_id}-") and len(tuning_job.name) <= 32

    search(tuning_job)
    first, second = TrainingJob.objects.order_by("pk")
    for training, loss in ((first, 0.7), (second, 0.2)):  # Minimize: the second is the best
        metric_store.put(training_metrics.series_key(training), "algo-1", [("loss", 1000, loss)])
    TrainingJob.objects.update(training_job_status="Completed", training_end_time=timezone.now())
    search(tuning_job)
    found = look(execution)
    assert found["Tune"]["StepStatus"] == "Succeeded"
    row = execution.steps.get(step_name="Tune")
    assert [item["TrainingJobName"] for item in row.properties["TrainingJobSummaries"]] == [
        second.training_job_name,
        first.training_job_name,
    ]
    assert row.properties["BestTrainingJob"]["TrainingJobName"] == second.training_job_name
    look(execution)
    model = execution.steps.get(step_name="BestModel")
    assert model.status == "Succeeded"
    assert model.properties["PrimaryContainer"]["Environment"] == {"BEST": second.training_job_name}
    assert model.properties["PrimaryContainer"]["ModelDataUrl"] == (
        f"s3://bkt/tuned/{second.training_job_name}/output/model.tar.gz"
    )


def test_a_property_neither_tuning_answer_has_is_refused_at_create():
    role = {"Get": "Steps.Tune.BestJob"}
    bad = {**BEST_MODEL, "Arguments": {**BEST_MODEL["Arguments"], "ExecutionRoleArn": role}}
    with pytest.raises(ValidationException, match="reads a property step 'Tune' does not have"):
        definition.parse(sample.text(Steps=[TUNE, bad]))
