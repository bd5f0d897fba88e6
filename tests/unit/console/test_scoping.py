"""An account sees only its own resources in the console, by page and by direct URL; an
operator sees every account's and the nodes."""

import pytest
from django.test import Client

from accounts.models import AccessKey
from tests.unit.console.conftest import ACCOUNT_A, ACCOUNT_B, in_service_endpoint, make_job, operator
from training.models import TrainingJob

JOB_PAGES = ["/", "live", "logs?stream=x/algo-1-1", "metrics", "clone"]


def test_the_job_list_shows_only_the_accounts_own_jobs(account_a):
    make_job(ACCOUNT_A, "mine")
    make_job(ACCOUNT_B, "theirs")

    page = account_a.get("/console/training-jobs/").content.decode()
    rows = account_a.get("/console/training-jobs/rows").json()["html"]

    assert "mine" in page and "theirs" not in page
    assert "mine" in rows and "theirs" not in rows


@pytest.mark.parametrize("suffix", JOB_PAGES)
def test_another_accounts_job_is_not_found_by_direct_url(account_a, suffix):
    theirs = make_job(ACCOUNT_B, "theirs")

    response = account_a.get(f"/console/training-jobs/{theirs.training_job_name}/{suffix.lstrip('/')}")

    assert response.status_code == 404


def test_another_account_cannot_stop_a_job(account_a):
    theirs = make_job(ACCOUNT_B, "theirs")

    response = account_a.post(f"/console/training-jobs/{theirs.training_job_name}/stop")

    assert response.status_code == 404
    assert TrainingJob.objects.get(pk=theirs.pk).training_job_status == "InProgress"


def test_another_accounts_endpoint_is_not_found_and_keeps_its_weights(account_b):
    deployment = in_service_endpoint(ACCOUNT_A)
    endpoint = deployment.endpoint

    assert account_b.get(f"/console/endpoints/{endpoint.endpoint_name}/").status_code == 404
    assert endpoint.endpoint_name not in account_b.get("/console/endpoints/").content.decode()
    response = account_b.post(
        f"/console/endpoints/{endpoint.endpoint_name}/weights",
        {"variant": "AllTraffic", "weight-AllTraffic": "5", "count-AllTraffic": "1"},
    )
    assert response.status_code == 404
    deployment.refresh_from_db()
    assert deployment.desired["AllTraffic"]["DesiredWeight"] == 1.0


def test_an_operator_sees_every_accounts_jobs_and_the_capacity_page(db):
    make_job(ACCOUNT_A, "job-of-a")
    make_job(ACCOUNT_B, "job-of-b")
    client = operator()

    page = client.get("/console/training-jobs/").content.decode()

    assert "job-of-a" in page and "job-of-b" in page
    assert client.get("/console/capacity/").status_code == 200


def test_an_account_has_no_capacity_page(account_a):
    assert account_a.get("/console/capacity/").status_code == 404
    assert "Capacity" not in account_a.get("/console/training-jobs/").content.decode()


def test_a_visitor_who_is_not_signed_in_is_sent_to_the_sign_in_page(db):
    job = make_job(ACCOUNT_A, "mine")

    response = Client().get(f"/console/training-jobs/{job.training_job_name}/")

    assert response.status_code == 302
    assert response["Location"].startswith("/console/login?next=")


def test_a_deactivated_key_ends_its_console_session(account_a, settings):
    settings.SAGEPORT_ACCESS_KEY_CACHE_SECONDS = 0  # the key is looked up again at once
    AccessKey.objects.filter(account_id=ACCOUNT_A).update(active=False)

    response = account_a.get("/console/training-jobs/")

    assert response.status_code == 302
    assert response["Location"].startswith("/console/login")
