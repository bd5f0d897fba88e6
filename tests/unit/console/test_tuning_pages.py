"""The tuning job pages: the list and a job's page (its training jobs, linked to theirs, with their
tuned hyperparameters) for the owner only, and Stop through StopHyperParameterTuningJob."""
from tests.unit.console.conftest import ACCOUNT_A, ACCOUNT_B, ctx, job_request, signed_in
from training import services as training_services
from tuning import services as tuning_services
from tuning.models import HyperParameterTuningJob, TuningTrainingJob


def tuning_request(name: str) -> dict:
    definition = {key: value for key, value in job_request("x").items() if key != "TrainingJobName"}
    definition["AlgorithmSpecification"]["MetricDefinitions"] = [{"Name": "loss", "Regex": "loss=([0-9.]+)"}]
    return {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "loss"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 2, "MaxParallelTrainingJobs": 1},
            "ParameterRanges": {
                "IntegerParameterRanges": [{"Name": "depth", "MinValue": "1", "MaxValue": "4"}],
            },
        },
        "TrainingJobDefinition": definition,
    }


def test_tuning_job_pages_render_for_their_account_only(account_a):
    job = tuning_services.create_tuning_job(ctx(ACCOUNT_A), tuning_request("search-1"))
    TuningTrainingJob.objects.create(
        tuning_job=job, number=1, training_job_name="search-1-001-0a1b2c3d",
        tuned_hyperparameters={"depth": "3"},
    )
    training = training_services.create_training_job(
        ctx(ACCOUNT_A), job_request("search-1-001-0a1b2c3d"), tuning_job_arn=job.arn
    )

    assert "search-1" in account_a.get("/console/tuning-jobs/").content.decode()
    page = account_a.get(f"/console/tuning-jobs/{job.name}/").content.decode()
    assert f'href="/console/training-jobs/{training.training_job_name}/">search-1-001-0a1b2c3d' in page
    assert "depth=3" in page and "InProgress" in page
    assert signed_in(ACCOUNT_B).get(f"/console/tuning-jobs/{job.name}/").status_code == 404
    account_a.post(f"/console/tuning-jobs/{job.name}/stop")
    job.refresh_from_db()
    assert job.status == "Stopping"


def test_a_warm_start_tuning_job_page_names_its_parents(account_a):
    parent = tuning_services.create_tuning_job(ctx(ACCOUNT_A), tuning_request("parent-1"))
    HyperParameterTuningJob.objects.filter(pk=parent.pk).update(status="Completed")
    child_request = tuning_request("child-1")
    child_request["HyperParameterTuningJobConfig"]["Strategy"] = "Bayesian"
    child_request["WarmStartConfig"] = {
        "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": "parent-1"}],
        "WarmStartType": "TransferLearning",
    }
    child = tuning_services.create_tuning_job(ctx(ACCOUNT_A), child_request)
    page = account_a.get(f"/console/tuning-jobs/{child.name}/").content.decode()
    assert "Warm start (TransferLearning) from: parent-1" in page


def test_a_tuning_job_of_several_definitions_shows_each_training_jobs_definition(account_a):
    lone = tuning_request("multi-1")
    config = lone["HyperParameterTuningJobConfig"]
    objective, ranges = config.pop("HyperParameterTuningJobObjective"), config.pop("ParameterRanges")
    body = {**lone.pop("TrainingJobDefinition"), "TuningObjective": objective, "HyperParameterRanges": ranges}
    lone["TrainingJobDefinitions"] = [{**body, "DefinitionName": name} for name in ("first", "second")]
    job = tuning_services.create_tuning_job(ctx(ACCOUNT_A), lone)
    TuningTrainingJob.objects.create(
        tuning_job=job, number=1, training_job_name="multi-1-001-0a1b2c3d", definition_name="second",
        tuned_hyperparameters={"depth": "2"},
    )
    page = account_a.get(f"/console/tuning-jobs/{job.name}/").content.decode()
    assert "multi-1-001-0a1b2c3d <small>(second)</small>" in page
    assert "Minimize <strong>loss</strong>" in page


def test_a_retry_names_and_links_the_failed_attempt_it_retries(account_a):
    job = tuning_services.create_tuning_job(ctx(ACCOUNT_A), tuning_request("retried-1"))
    names = ["retried-1-001-0a1b2c3d", "retried-1-001-4e5f6a7b"]
    created = []
    for attempt, name in enumerate(names):
        TuningTrainingJob.objects.create(
            tuning_job=job, number=1, attempt=attempt, training_job_name=name,
            tuned_hyperparameters={"depth": "3"},
        )
        created.append(
            training_services.create_training_job(ctx(ACCOUNT_A), job_request(name), tuning_job_arn=job.arn)
        )
    failed = created[0]
    reason = "InternalServerError: the container of algo-1 disappeared from the Docker engine."
    type(failed).objects.filter(pk=failed.pk).update(training_job_status="Failed", failure_reason=reason)

    page = account_a.get(f"/console/tuning-jobs/{job.name}/").content.decode()

    assert f'retry 1 of <a href="/console/training-jobs/{names[0]}/">{names[0]}</a>' in page
    assert f"Failed <small>{reason}</small>" in page
    assert page.count("retry 1 of") == 1  # the first attempt retries nothing
