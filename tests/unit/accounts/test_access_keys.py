import re
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.utils import timezone

from accounts.accesskeys import (
    create_access_key,
    ensure_default_access_key,
    resolve_access_key,
    resolve_signing_key,
)
from accounts.models import AccessKey
from protocol.errors import ExpiredToken


def test_created_key_looks_like_an_aws_key_pair(db):
    key = create_access_key("123456789012")

    assert re.fullmatch(r"AKIA[A-Z0-9]{16}", key.access_key_id)
    assert len(key.secret_access_key) == 40
    assert resolve_access_key(key.access_key_id) == (key.secret_access_key, "123456789012")


def test_inactive_and_unknown_keys_do_not_resolve(db):
    key = create_access_key("123456789012")
    key.active = False
    key.save()

    assert resolve_access_key(key.access_key_id) is None
    assert resolve_access_key("AKIANOSUCHKEY0000000") is None


def test_account_id_must_be_twelve_digits(db):
    with pytest.raises(ValidationError, match="12 digits"):
        create_access_key("1234")


def test_default_key_is_created_once_for_the_default_account(db, settings):
    settings.SAGEPORT_DEFAULT_ACCOUNT_ID = "000000000042"

    first = ensure_default_access_key()

    assert ensure_default_access_key() == first
    assert (first.account_id, first.is_default) == ("000000000042", True)


def test_createaccesskey_prints_key_secret_and_account_on_one_line(db, capsys):
    call_command("createaccesskey", "--account-id", "111122223333")

    key_id, secret, account_id = capsys.readouterr().out.split()
    assert resolve_access_key(key_id) == (secret, account_id)
    assert account_id == "111122223333"


def test_createaccesskey_rejects_a_malformed_account_id(db):
    with pytest.raises(CommandError, match="12 digits"):
        call_command("createaccesskey", "--account-id", "abc")


@pytest.fixture
def database_down(monkeypatch):
    """Every AccessKey query fails, as while the database is unavailable."""

    def fail(*args, **kwargs):
        raise OperationalError("database is unavailable")

    return lambda: monkeypatch.setattr(AccessKey.objects, "filter", fail)


def test_a_recently_confirmed_key_is_accepted_while_the_database_fails(db, settings, database_down):
    settings.SAGEPORT_ACCESS_KEY_CACHE_SECONDS = 0  # every call asks the database
    key = create_access_key("123456789012")
    assert resolve_access_key(key.access_key_id) == (key.secret_access_key, "123456789012")

    database_down()

    assert resolve_access_key(key.access_key_id) == (key.secret_access_key, "123456789012")


def test_an_unconfirmed_or_too_old_key_is_not_accepted_while_the_database_fails(db, settings, database_down):
    settings.SAGEPORT_ACCESS_KEY_CACHE_SECONDS = 0
    settings.SAGEPORT_ACCESS_KEY_OUTAGE_SECONDS = 0  # nothing is recent enough
    key = create_access_key("123456789012")
    resolve_access_key(key.access_key_id)

    database_down()

    with pytest.raises(OperationalError):
        resolve_access_key(key.access_key_id)
    with pytest.raises(OperationalError):
        resolve_access_key("AKIANOSUCHKEY0000000")


def test_expired_temporary_credentials_are_expired_for_the_signers_and_unknown_elsewhere(db):
    """STS's credentials past their expiry: ExpiredToken for the SigV4 verifiers (AWS's answer),
    plain refusal for the console's and the Kubernetes API's sign-in (resolve_access_key)."""
    past = timezone.now() - timedelta(seconds=1)
    temporary = create_access_key("123456789012", expires_at=past, id_prefix="ASIA")
    container_key = create_access_key("123456789012", expires_at=past)

    with pytest.raises(ExpiredToken):
        resolve_signing_key(temporary.access_key_id)
    assert resolve_access_key(temporary.access_key_id) is None
    assert resolve_signing_key(container_key.access_key_id) is None  # a container's: refused as before
    assert resolve_signing_key("ASIANOSUCHKEY0000000") is None
