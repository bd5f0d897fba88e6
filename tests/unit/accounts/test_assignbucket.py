"""`manage.py assignbucket`: how an operator gives an account a bucket made outside the gateway."""
import pytest
from django.core.management import CommandError, call_command

from accounts import buckets


@pytest.mark.django_db
def test_a_bucket_of_nobody_is_given_to_the_account():
    call_command("assignbucket", "made-outside", "123456789012")
    assert buckets.owner_of("made-outside") == "123456789012"


@pytest.mark.django_db
def test_a_bucket_of_another_account_moves_only_when_asked():
    buckets.claim("taken", "210987654321")
    with pytest.raises(CommandError, match="belongs to account 210987654321; give --move"):
        call_command("assignbucket", "taken", "123456789012")
    assert buckets.owner_of("taken") == "210987654321"
    call_command("assignbucket", "taken", "123456789012", "--move")
    assert buckets.owner_of("taken") == "123456789012"


@pytest.mark.django_db
def test_an_account_id_that_is_not_twelve_digits_is_refused():
    with pytest.raises(CommandError, match="is not 12 digits"):
        call_command("assignbucket", "b", "12345")
    assert buckets.owner_of("b") is None
