"""The tuning reconciler over real rows (the training jobs it creates are the training feature's
own, through its service): never more than MaxParallelTrainingJobs at once, the next launched only
when one ended, the best by the objective, and a stop that creates nothing more."""
from tests.unit.tuning.helpers import CTX, create, end, step, trainings
from tuning import services
from tuning.presenters import describe_tuning_job


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
