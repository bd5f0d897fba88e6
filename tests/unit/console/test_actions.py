"""What the console changes, it changes through the API's own services: the same calls, the
same rules, the same errors."""

from unittest import mock

import pytest

from accounts import buckets
from hosting import services as hosting_services
from hosting.models import Endpoint
from tests.unit.console.conftest import ACCOUNT_A, in_service_endpoint, make_job
from training import services as training_services
from training.models import TrainingJob


def test_stop_goes_through_the_training_service(account_a):
    job = make_job(ACCOUNT_A, "to-stop")
    with mock.patch.object(
        training_services, "stop_training_job", wraps=training_services.stop_training_job
    ) as stop:
        response = account_a.post(f"/console/training-jobs/{job.training_job_name}/stop", follow=True)

    stop.assert_called_once()
    assert stop.call_args.args[0].account_id == ACCOUNT_A and stop.call_args.args[1] == "to-stop"
    job.refresh_from_db()
    assert (job.training_job_status, job.secondary_status) == ("Stopping", "Stopping")
    assert "Stopping to-stop" in response.content.decode()


def test_stopping_a_finished_job_shows_the_apis_error_and_changes_nothing(account_a):
    job = make_job(ACCOUNT_A, "done")
    TrainingJob.objects.filter(pk=job.pk).update(
        training_job_status="Completed", secondary_status="Completed"
    )

    response = account_a.post(f"/console/training-jobs/{job.training_job_name}/stop", follow=True)

    assert "ValidationException: The training job done is in status Completed" in response.content.decode()
    assert TrainingJob.objects.get(pk=job.pk).training_job_status == "Completed"


def test_new_weights_go_through_the_hosting_service(account_a):
    deployment = in_service_endpoint(ACCOUNT_A)
    endpoint = deployment.endpoint
    with mock.patch.object(
        hosting_services,
        "update_weights_and_capacities",
        wraps=hosting_services.update_weights_and_capacities,
    ) as update:
        account_a.post(
            f"/console/endpoints/{endpoint.endpoint_name}/weights",
            {"variant": "AllTraffic", "weight-AllTraffic": "0.25", "count-AllTraffic": "1"},
        )

    update.assert_called_once()
    deployment.refresh_from_db()
    assert deployment.desired["AllTraffic"] == {"DesiredWeight": 0.25, "DesiredInstanceCount": 1}
    assert Endpoint.objects.get(pk=endpoint.pk).endpoint_status == "Updating"


def test_a_weight_that_is_not_a_number_gets_the_apis_validation_error(account_a):
    deployment = in_service_endpoint(ACCOUNT_A)

    response = account_a.post(
        f"/console/endpoints/{deployment.endpoint.endpoint_name}/weights",
        {"variant": "AllTraffic", "weight-AllTraffic": "heavy", "count-AllTraffic": "1"},
        follow=True,
    )

    assert "ValidationException" in response.content.decode()
    deployment.refresh_from_db()
    assert deployment.desired["AllTraffic"]["DesiredWeight"] == 1.0
    assert Endpoint.objects.get(pk=deployment.endpoint.pk).endpoint_status == "InService"


def test_delete_goes_through_the_hosting_service(account_a):
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint
    with mock.patch.object(
        hosting_services, "delete_endpoint", wraps=hosting_services.delete_endpoint
    ) as delete:
        account_a.post(f"/console/endpoints/{endpoint.endpoint_name}/delete")

    delete.assert_called_once()
    assert Endpoint.objects.get(pk=endpoint.pk).endpoint_status == "Deleting"


@pytest.fixture
def own_bucket(db):
    """The bucket of conftest's job requests, the account's own: a clone passes the tenancy rule."""
    buckets.claim("bucket", ACCOUNT_A)


def test_clone_creates_the_job_through_the_training_service(account_a, own_bucket):
    job = make_job(ACCOUNT_A, "original")
    form = account_a.get("/console/training-jobs/original/clone").content.decode()
    assert "original-clone" in form and "img:latest" in form  # prefilled

    with mock.patch.object(
        training_services, "create_training_job", wraps=training_services.create_training_job
    ) as create:
        response = account_a.post(
            "/console/training-jobs/original/clone",
            {"name": "the-copy", "request": _request_json(job)},
        )

    create.assert_called_once()
    copy = TrainingJob.objects.get(training_job_name="the-copy")
    assert response["Location"] == f"/console/training-jobs/{copy.training_job_name}/"
    assert (copy.account_id, copy.request["AlgorithmSpecification"]) == (
        ACCOUNT_A,
        job.request["AlgorithmSpecification"],
    )


def test_a_clone_the_api_would_refuse_is_refused_with_its_message(account_a, own_bucket):
    job = make_job(ACCOUNT_A, "original")

    bad_json = account_a.post("/console/training-jobs/original/clone", {"name": "x", "request": "{"})
    taken = account_a.post(
        "/console/training-jobs/original/clone", {"name": "original", "request": _request_json(job)}
    )

    assert bad_json.status_code == 400 and "not valid JSON" in bad_json.content.decode()
    assert taken.status_code == 400 and "ResourceInUse" in taken.content.decode()
    assert TrainingJob.objects.count() == 1


def _request_json(job: TrainingJob) -> str:
    import json

    return json.dumps(job.request)
