"""The container-credentials endpoint as botocore's ContainerProvider uses it, and the life of the
keys it hands out: issued per training job or endpoint, refreshed before expiry, refused once
expired or revoked."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from accounts import accesskeys
from accounts.accesskeys import create_access_key, resolve_access_key
from accounts.container_credentials import grant, holders, revoke, revoke_ended, sweep
from accounts.models import AccessKey, ContainerGrant
from protocol.sigv4 import session_token_for

JOB = "arn:aws:sagemaker:us-east-1:111122223333:training-job/job-1"
OTHER_JOB = "arn:aws:sagemaker:us-east-1:111122223333:training-job/job-2"
ENDPOINT = "arn:aws:sagemaker:us-east-1:111122223333:endpoint/ep-1"


@pytest.fixture(autouse=True)
def no_key_cache(settings):
    settings.SAGEPORT_ACCESS_KEY_CACHE_SECONDS = 0  # revocations show at once
    settings.SAGEPORT_CONTAINER_CREDENTIALS_SECONDS = 3600


def fetch(client, token: str):
    return client.get("/v2/credentials", HTTP_AUTHORIZATION=token)


def test_a_holders_containers_share_one_token(db):
    token = grant(JOB, "111122223333")

    assert grant(JOB, "111122223333") == token
    assert grant(OTHER_JOB, "111122223333") != token


def test_the_endpoint_answers_a_key_of_the_holders_account_in_ecs_format(db, client):
    before = timezone.now()
    response = fetch(client, grant(JOB, "111122223333"))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"AccessKeyId", "SecretAccessKey", "Token", "Expiration", "AccountId"}
    # The key's own session token, which CRT-based clients require (accounts/container_credentials.py).
    assert body["Token"] == session_token_for(body["SecretAccessKey"])
    assert resolve_access_key(body["AccessKeyId"]) == (body["SecretAccessKey"], "111122223333")
    expiration = parse_datetime(body["Expiration"])
    assert before + timedelta(seconds=3590) < expiration <= timezone.now() + timedelta(seconds=3600)
    assert response["Cache-Control"] == "no-store"


def test_the_first_key_exists_before_any_container_asks(db):
    grant(JOB, "111122223333")

    (key,) = AccessKey.objects.filter(issued_for=JOB)
    assert key.expires_at > timezone.now() + timedelta(minutes=59)


def test_the_next_key_is_minted_ahead_and_answered_once_the_current_one_is_past_half_its_life(db, client):
    token = grant(JOB, "111122223333")
    first = fetch(client, token).json()["AccessKeyId"]
    sweep()
    assert AccessKey.objects.filter(issued_for=JOB).count() == 1  # fresh: nothing to mint yet

    age(first, minutes_left=40)  # less than three quarters of its hour left
    sweep()
    assert AccessKey.objects.filter(issued_for=JOB).count() == 2
    assert fetch(client, token).json()["AccessKeyId"] == first  # settled, and more than half left

    age(first, minutes_left=20)  # what an SDK refreshing 15 minutes ahead would be holding
    second = fetch(client, token).json()["AccessKeyId"]
    assert second != first
    assert resolve_access_key(first) is not None  # still valid until it expires


def age(access_key_id: str, minutes_left: int) -> None:
    """Make a key older, as time passing would: more than SETTLE_SECONDS old, expiring sooner."""
    AccessKey.objects.filter(access_key_id=access_key_id).update(
        created_at=timezone.now() - timedelta(minutes=60 - minutes_left),
        expires_at=timezone.now() + timedelta(minutes=minutes_left),
    )


def test_a_settled_key_is_preferred_to_one_minted_seconds_ago(db, client):
    token = grant(JOB, "111122223333")
    (settled,) = AccessKey.objects.filter(issued_for=JOB).values_list("access_key_id", flat=True)
    age(settled, minutes_left=50)
    create_access_key("111122223333", expires_at=timezone.now() + timedelta(hours=1), issued_for=JOB)

    assert fetch(client, token).json()["AccessKeyId"] == settled


def test_unknown_or_missing_tokens_are_refused_with_an_aws_error(db, client):
    for token in ("not-a-token", ""):
        response = fetch(client, token)
        assert response.status_code == 403
        assert response.json()["__type"] == "AccessDeniedException"
        assert response["X-Amzn-ErrorType"] == "AccessDeniedException"
    assert AccessKey.objects.count() == 0


def test_only_get_is_answered(db, client):
    response = client.post("/v2/credentials", HTTP_AUTHORIZATION=grant(JOB, "111122223333"))

    assert response.status_code == 405
    assert AccessKey.objects.count() == 1  # the grant's own, none more


def test_revoking_a_holder_refuses_its_token_and_its_keys(db, client):
    token = grant(JOB, "111122223333")
    mine = fetch(client, token).json()["AccessKeyId"]
    others = fetch(client, grant(OTHER_JOB, "111122223333")).json()["AccessKeyId"]

    revoke(JOB)

    assert fetch(client, token).status_code == 403
    assert resolve_access_key(mine) is None
    assert resolve_access_key(others) is not None


def test_an_expired_key_is_refused_even_when_remembered(db, monkeypatch, settings):
    settings.SAGEPORT_ACCESS_KEY_CACHE_SECONDS = 3600
    expiry = timezone.now() + timedelta(minutes=5)
    key = create_access_key("111122223333", expires_at=expiry, issued_for=JOB)
    assert resolve_access_key(key.access_key_id) is not None  # now remembered

    monkeypatch.setattr(accesskeys.timezone, "now", lambda: expiry + timedelta(seconds=1))

    assert resolve_access_key(key.access_key_id) is None


def test_the_sweep_deletes_expired_keys_only(db):
    expired = create_access_key(
        "111122223333", expires_at=timezone.now() - timedelta(seconds=1), issued_for=JOB
    )
    current = create_access_key(
        "111122223333", expires_at=timezone.now() + timedelta(hours=1), issued_for=JOB
    )
    users = create_access_key("111122223333")

    sweep()

    remaining = set(AccessKey.objects.values_list("access_key_id", flat=True))
    assert remaining == {current.access_key_id, users.access_key_id}
    assert expired.access_key_id not in remaining


def test_holders_that_ended_without_their_clean_up_are_revoked(db, client):
    for holder in (JOB, OTHER_JOB, ENDPOINT):
        fetch(client, grant(holder, "111122223333"))
    listed = holders("training-job")
    assert listed == {JOB, OTHER_JOB}

    revoke_ended(listed, live={OTHER_JOB})

    assert set(ContainerGrant.objects.values_list("holder", flat=True)) == {OTHER_JOB, ENDPOINT}
    assert set(AccessKey.objects.values_list("issued_for", flat=True)) == {OTHER_JOB, ENDPOINT}
