"""Creating a job is acknowledged once it is committed, whatever the broker does."""
import pytest
from kombu.exceptions import OperationalError

from protocol.context import RequestContext
from training import services
from training.models import TrainingJob

CTX = RequestContext(account_id="123456789012", region="us-east-1", access_key_id="AKIATEST")


def request(name: str) -> dict:
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "img", "TrainingInputMode": "File"},
        "RoleArn": "arn:aws:iam::123456789012:role/r",
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
    }


@pytest.mark.django_db(transaction=True)
def test_a_job_is_created_and_left_for_the_sweeper_when_the_broker_is_down(monkeypatch):
    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")

    monkeypatch.setattr(services.reconcile_training_job, "delay", broker_down)

    job = services.create_training_job(CTX, request("while-broker-down"))

    stored = TrainingJob.objects.get(pk=job.pk)
    assert (stored.training_job_status, stored.secondary_status) == ("InProgress", "Starting")
    assert stored.next_check_at is not None  # overdue soon: the sweeper re-enqueues it


@pytest.mark.django_db(transaction=True)
def test_stop_moves_a_running_job_to_stopping_once_and_refuses_a_finished_one(monkeypatch):
    monkeypatch.setattr(services, "_nudge", lambda job_id: None)
    job = TrainingJob.objects.get(pk=services.create_training_job(CTX, request("to-stop")).pk)

    services.stop_training_job(CTX, "to-stop")
    services.stop_training_job(CTX, "to-stop")  # a repeated stop is harmless

    job.refresh_from_db()
    assert (job.training_job_status, job.secondary_status) == ("Stopping", "Stopping")
    TrainingJob.objects.filter(pk=job.pk).update(training_job_status="Stopped", secondary_status="Stopped")
    with pytest.raises(services.ValidationException, match="is in status Stopped and cannot be stopped"):
        services.stop_training_job(CTX, "to-stop")
