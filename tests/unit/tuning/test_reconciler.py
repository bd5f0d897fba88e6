"""The tuning reconciler over real rows (the training jobs it creates are the training feature's
own, through its service): never more than MaxParallelTrainingJobs at once, the next launched only
when one ended, the best by the objective, and a stop that creates nothing more."""
from django.utils import timezone

from logs import metrics as metric_store
from protocol.context import RequestContext
from training import metrics as training_metrics
from training.models import TrainingJob
from tuning import reconciler, services
from tuning.models import HyperParameterTuningJob
from tuning.presenters import describe_tuning_job

CTX = RequestContext(account_id="111111111111", region="us-east-1", access_key_id="AKIATEST")


def create(name: str, maximum: int = 3, parallel: int = 2) -> HyperParameterTuningJob:
    return services.create_tuning_job(CTX, {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "RandomSeed": 3,
            "HyperParameterTuningJobObjective": {"Type": "Maximize", "MetricName": "acc"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": maximum, "MaxParallelTrainingJobs": parallel},
            "ParameterRanges": {
                "ContinuousParameterRanges": [{"Name": "lr", "MinValue": "0", "MaxValue": "1"}],
            },
        },
        "TrainingJobDefinition": {
            "AlgorithmSpecification": {
                "TrainingImage": "algo:1", "TrainingInputMode": "File",
                "MetricDefinitions": [{"Name": "acc", "Regex": "acc=([0-9.]+)"}],
            },
            "RoleArn": "arn:aws:iam::111111111111:role/r",
            "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 60},
        },
        "Tags": [{"Key": "team", "Value": "a"}],
    })


def step(job: HyperParameterTuningJob) -> HyperParameterTuningJob:
    HyperParameterTuningJob.objects.filter(pk=job.pk).update(next_check_at=None)
    reconciler.reconcile(job.pk)
    job.refresh_from_db()
    return job


def trainings(job: HyperParameterTuningJob) -> list[TrainingJob]:
    return list(TrainingJob.objects.filter(training_job_name__startswith=f"{job.name}-").order_by("pk"))


def end(training: TrainingJob, acc: float | None, status: str = "Completed") -> None:
    if acc is not None:
        metric_store.put(training_metrics.series_key(training), "algo-1", [("acc", 1000, acc)])
    TrainingJob.objects.filter(pk=training.pk).update(
        training_job_status=status, training_end_time=timezone.now()
    )


def test_a_search_runs_at_most_its_parallel_limit_and_ends_with_the_best(db):
    job = step(create("search"))
    first = trainings(job)
    assert len(first) == 2
    assert all(training.request["TuningJobArn"] == job.arn for training in first)
    assert all(training.tags == [{"Key": "team", "Value": "a"}] for training in first)

    assert len(trainings(step(job))) == 2  # none ended: none more
    end(first[0], 0.5)
    assert len(trainings(step(job))) == 3  # one ended: one more, and the last
    end(first[1], None, status="Failed")
    end(trainings(job)[2], 0.9)
    job = step(job)

    assert job.status == "Completed"
    assert len(trainings(job)) == 3
    answer = describe_tuning_job(services.get_tuning_job(CTX, "search"))
    assert answer["BestTrainingJob"]["TrainingJobName"] == trainings(job)[2].training_job_name
    assert answer["BestTrainingJob"]["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] == 0.9
    assert answer["TrainingJobStatusCounters"]["NonRetryableError"] == 1
    assert answer["ObjectiveStatusCounters"] == {"Succeeded": 2, "Pending": 0, "Failed": 1}
    # By the objective, a training job that reported none is left out (the SortBy documentation).
    order = {"SortBy": "FinalObjectiveMetricValue", "SortOrder": "Descending"}
    by_objective, _ = services.list_trials(job, order)
    assert [trial.objective for trial in by_objective] == [0.9, 0.5]
    failed, _ = services.list_trials(job, {"StatusEquals": "Failed"})
    assert [trial.job.training_job_name for trial in failed] == [first[1].training_job_name]


def test_a_search_where_no_training_job_reported_the_objective_fails(db):
    job = step(create("nothing", maximum=1, parallel=1))
    end(trainings(job)[0], None, status="Failed")
    job = step(job)
    assert job.status == "Failed"
    assert job.failure_reason == (
        "No training job reported the objective metric acc (1 of 1 training jobs failed)."
    )


def test_a_stopped_search_stops_its_running_training_jobs_and_launches_none(db):
    job = step(create("halt", maximum=4, parallel=2))
    services.stop_tuning_job(CTX, "halt")
    job = step(job)
    assert [training.training_job_status for training in trainings(job)] == ["Stopping", "Stopping"]
    for training in trainings(job):
        end(training, None, status="Stopped")
    job = step(job)
    assert job.status == "Stopped" and len(trainings(job)) == 2
