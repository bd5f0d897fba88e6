"""PreparedQuery: SQL compiled once, then run with each call's values, gives what the ORM gives."""
from datetime import UTC, datetime

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.forms.models import model_to_dict

from protocol.prepared import PreparedQuery
from training.models import SecondaryStatusTransition, TrainingJob

CREATED = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)


def _job(name: str, account_id: str = "111122223333") -> TrainingJob:
    return TrainingJob.objects.create(
        account_id=account_id, region="eu-west-1", training_job_name=name,
        training_job_arn=f"arn:aws:sagemaker:eu-west-1:{account_id}:training-job/{name}",
        request={"TrainingJobName": name, "Nested": {"List": [1, 2.5, None]}},
        tags=[{"Key": "k", "Value": name}],
        creation_time=CREATED, last_modified_time=CREATED, training_start_time=None,
    )


by_account_and_name = PreparedQuery(
    lambda account_id, name: TrainingJob.objects.filter(account_id=account_id, training_job_name=name)[:1],
    str, str,
)


@pytest.mark.django_db
@pytest.mark.parametrize("queries_logged", [True, False], ids=["django-cursor", "driver-cursor"])
def test_each_call_reads_with_its_own_values_what_the_orm_reads(queries_logged, django_assert_num_queries):
    first, second = _job("first"), _job("second")
    _job("second", account_id="444455556666")

    for job in (first, second, first):
        if queries_logged:
            with django_assert_num_queries(1):
                (found,) = by_account_and_name("111122223333", job.training_job_name)
        else:
            assert not connection.queries_logged  # read through the driver's own cursor
            (found,) = by_account_and_name("111122223333", job.training_job_name)
        assert isinstance(found, TrainingJob)
        assert model_to_dict(found) == model_to_dict(TrainingJob.objects.get(pk=job.pk))
        assert found.creation_time == CREATED  # an aware datetime, as the ORM converts it
        assert found.request["Nested"] == {"List": [1, 2.5, None]}  # JSON decoded
        assert found._state.adding is False and found._state.db == "default"
    assert by_account_and_name("111122223333", "missing") == []


@pytest.mark.django_db
def test_integer_parameters_and_the_models_ordering_are_kept():
    job, other = _job("with-history"), _job("other")
    for minute, status in ((3, "Training"), (1, "Starting"), (2, "Downloading")):
        SecondaryStatusTransition.objects.create(
            job=job, status=status, start_time=CREATED.replace(minute=minute)
        )
    SecondaryStatusTransition.objects.create(job=other, status="Starting", start_time=CREATED)
    history = PreparedQuery(lambda job_id: SecondaryStatusTransition.objects.filter(job_id=job_id), int)

    assert [row.status for row in history(job.pk)] == ["Starting", "Downloading", "Training"]
    assert [row.status for row in history(other.pk)] == ["Starting"]


@pytest.mark.django_db
def test_datetime_parameters_reach_the_database_as_the_orm_sends_them():
    for minutes in range(4):
        TrainingJob.objects.filter(pk=_job(f"at-{minutes}").pk).update(creation_time=CREATED.replace(minute=minutes))
    between = PreparedQuery(
        lambda after, before: TrainingJob.objects.filter(creation_time__gt=after, creation_time__lt=before)
        .order_by("creation_time"),
        datetime, datetime,
    )

    found = between(CREATED.replace(minute=0), CREATED.replace(minute=3))
    assert [job.training_job_name for job in found] == ["at-1", "at-2"]
    assert between(CREATED.replace(minute=3), CREATED.replace(minute=0)) == []


@pytest.mark.django_db
def test_a_parameter_the_lookup_transforms_is_refused_rather_than_answered_wrongly():
    _job("contains-me")
    containing = PreparedQuery(
        lambda text: TrainingJob.objects.filter(training_job_name__icontains=text), str
    )

    with pytest.raises(TypeError, match="transformed"):
        containing("contains")


def test_only_strings_integers_and_datetimes_can_be_parameters():
    with pytest.raises(TypeError, match="only str, int and datetime parameters"):
        PreparedQuery(lambda size: TrainingJob.objects.filter(restart_count__lt=size), float)


@pytest.mark.django_db
def test_the_driver_s_errors_arrive_as_django_s():
    by_account_and_name("111122223333", "compiled-first")
    with pytest.raises(DatabaseError, match="no such table"), transaction.atomic():
        with connection.cursor() as cursor:  # rolled back with the block
            cursor.execute('ALTER TABLE "jobs_trainingjob" RENAME TO "moved_away"')
        by_account_and_name("111122223333", "anything")
    assert by_account_and_name("111122223333", "anything") == []  # the table is back


@pytest.mark.django_db
def test_a_read_inside_a_transaction_that_failed_is_refused_as_the_orm_refuses_it():
    job = _job("taken")
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            _job("taken")  # the same name in the same account: the atomic block is now broken
        with pytest.raises(TransactionManagementError):
            by_account_and_name("111122223333", job.training_job_name)
