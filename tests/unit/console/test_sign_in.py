"""Signing in: an access key id with its secret (checked as the API checks a signature's key),
or a staff user; CSRF on every form; no open redirect."""

from django.contrib.auth import get_user_model
from django.test import Client

from accounts.accesskeys import create_access_key
from tests.unit.console.conftest import ACCOUNT_A, make_job


def _sign_in(client: Client, key_id: str, secret: str, **extra):
    return client.post(
        "/console/login", {"kind": "key", "access_key_id": key_id, "secret_access_key": secret, **extra}
    )


def test_a_wrong_secret_is_refused_and_signs_nobody_in(db):
    key = create_access_key(ACCOUNT_A)
    client = Client()

    response = _sign_in(client, key.access_key_id, key.secret_access_key + "x")

    assert response.status_code == 401
    assert "not valid" in response.content.decode()
    assert client.get("/console/training-jobs/").status_code == 302


def test_an_unknown_or_deactivated_key_is_refused(db):
    key = create_access_key(ACCOUNT_A)
    key.active = False
    key.save()

    assert _sign_in(Client(), key.access_key_id, key.secret_access_key).status_code == 401
    assert _sign_in(Client(), "AKIANOSUCHKEY", "secret").status_code == 401


def test_the_right_secret_opens_the_page_asked_for_and_never_another_site(db):
    key = create_access_key(ACCOUNT_A)

    inside = _sign_in(Client(), key.access_key_id, key.secret_access_key, next="/console/endpoints/")
    outside = _sign_in(Client(), key.access_key_id, key.secret_access_key, next="//evil.example/")

    assert inside["Location"] == "/console/endpoints/"
    assert outside["Location"] == "/console/"


def test_a_django_user_who_is_not_staff_is_refused(db):
    get_user_model().objects.create_user("someone", password="a long password here")

    response = Client().post(
        "/console/login", {"kind": "operator", "username": "someone", "password": "a long password here"}
    )

    assert response.status_code == 401


def test_a_form_posted_without_its_csrf_token_is_refused(db):
    key = create_access_key(ACCOUNT_A)
    client = Client(enforce_csrf_checks=True)
    page = client.get("/console/login")
    token = page.cookies["csrftoken"].value
    _sign_in(client, key.access_key_id, key.secret_access_key, csrfmiddlewaretoken=token)
    job = make_job(ACCOUNT_A, "mine")

    response = client.post(f"/console/training-jobs/{job.training_job_name}/stop")

    assert response.status_code == 403
    job.refresh_from_db()
    assert job.training_job_status == "InProgress"


def test_signing_out_ends_the_session(account_a):
    account_a.post("/console/logout")

    assert account_a.get("/console/training-jobs/").status_code == 302
