"""The reconciler with several training job definitions and with completion criteria, over real
rows: the definitions take turns within MaxParallelTrainingJobs, each training job runs its
definition and reports its own objective metric, the best is the best of all; a completion
criterion met stops the running training jobs, launches no more and ends Completed with
TuningJobCompletionDetails."""

from django.utils import timezone

from logs import metrics as metric_store
from tests.unit.tuning.helpers import CTX, end, report, several_params, step, trainings
from training import metrics as training_metrics
from training.models import TrainingJob
from tuning import services
from tuning.presenters import describe_tuning_job


def end_with_score(training: TrainingJob, score: float) -> None:
    metric_store.put(training_metrics.series_key(training), "algo-1", [("score", 1000, score)])
    TrainingJob.objects.filter(pk=training.pk).update(
        training_job_status="Completed", training_end_time=timezone.now()
    )


def test_the_definitions_take_turns_and_the_best_is_the_best_of_all(db):
    job = step(services.create_tuning_job(CTX, several_params("multi", maximum=3, parallel=2)))
    first = trainings(job)
    assert [training.request["HyperParameters"]["_tuning_objective_metric"] for training in first] == [
        "acc",
        "score",
    ]
    assert "lr" in first[0].request["HyperParameters"] and "depth" in first[1].request["HyperParameters"]
    end(first[0], 0.5)
    end_with_score(first[1], 0.8)
    job = step(job)
    third = trainings(job)[2]
    assert third.request["HyperParameters"]["_tuning_objective_metric"] == "acc"  # fast's second turn
    end(third, 0.6)
    job = step(job)

    assert job.status == "Completed"
    answer = describe_tuning_job(services.get_tuning_job(CTX, "multi"))
    best = answer["BestTrainingJob"]
    assert best["TrainingJobDefinitionName"] == "deep"
    assert best["FinalHyperParameterTuningJobObjectiveMetric"] == {
        "Type": "Maximize",
        "MetricName": "score",
        "Value": 0.8,
    }
    listed, _ = services.list_trials(job, {"SortBy": "Name"})
    assert [trial.row.definition_name for trial in listed] == ["fast", "deep", "fast"]


def test_a_target_reached_stops_the_running_training_jobs_and_completes(db):
    params = several_params("target", maximum=6, parallel=2)
    params["HyperParameterTuningJobConfig"]["TuningJobCompletionCriteria"] = {
        "TargetObjectiveMetricValue": 0.9
    }
    job = step(services.create_tuning_job(CTX, params))
    first = trainings(job)
    end(first[0], 0.95)
    job = step(job)
    assert len(trainings(job)) == 2  # none launched once the target is reached
    assert TrainingJob.objects.get(pk=first[1].pk).training_job_status == "Stopping"
    TrainingJob.objects.filter(pk=first[1].pk).update(
        training_job_status="Stopped", training_end_time=timezone.now()
    )
    job = step(job)
    assert job.status == "Completed"
    answer = describe_tuning_job(job)
    assert answer["TrainingJobStatusCounters"]["Stopped"] == 1
    assert answer["TuningJobCompletionDetails"] == {"NumberOfTrainingJobsObjectiveNotImproving": 0}


def test_training_jobs_not_improving_end_the_search_with_their_count(db):
    params = several_params("patience", maximum=10, parallel=1)
    params["HyperParameterTuningJobConfig"]["TuningJobCompletionCriteria"] = {
        "BestObjectiveNotImproving": {"MaxNumberOfTrainingJobsNotImproving": 3}
    }
    job = step(services.create_tuning_job(CTX, params))
    for _ in range(4):
        training = trainings(job)[-1]
        ending = (
            end
            if training.request["HyperParameters"]["_tuning_objective_metric"] == "acc"
            else end_with_score
        )
        ending(training, 0.5)  # the first sets the best; the next three do not improve it
        job = step(job)
    assert job.status == "Completed"
    assert len(trainings(job)) == 4
    assert (
        describe_tuning_job(job)["TuningJobCompletionDetails"]["NumberOfTrainingJobsObjectiveNotImproving"]
        == 3
    )


def test_with_hyperband_each_definition_reads_its_own_max_resource(db):
    """`fast` has epochs 4, `deep` epochs 2: two objective values are all of deep's resource, not
    of fast's."""
    job = step(services.create_tuning_job(CTX, several_params("bands", maximum=2, Strategy="Hyperband")))
    fast, deep = trainings(job)
    report(fast, (1000, 0.5), (2000, 0.6))
    metric_store.put(
        training_metrics.series_key(deep), "algo-1", [("score", 1000, 0.5), ("score", 2000, 0.6)]
    )
    step(job)
    assert TrainingJob.objects.get(pk=deep.pk).training_job_status == "Stopping"
    assert TrainingJob.objects.get(pk=fast.pk).training_job_status == "InProgress"
