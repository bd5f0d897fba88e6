"""A nudge (an API action, a container event, the sweeper) makes a resource's next look due now.
One that comes while a step holds the resource is not lost: that step's next look is at once."""

import pytest
from django.utils import timezone

from reconcile import leases
from tests.unit.reconcile.test_retries import downloading_job
from training import reconciler as training
from training import transitions as t
from training.models import TrainingJob

pytestmark = pytest.mark.django_db(transaction=True)

POLL = 0.5


@pytest.fixture(autouse=True)
def poll(settings):
    settings.SAGEPORT_POLL_INTERVAL_SECONDS = POLL


def waiting_step(nudge_meanwhile: bool):
    """A Downloading step that waits for a poll, while (maybe) a nudge comes for its job."""
    def step(job, token):
        if nudge_meanwhile:
            leases.due_now(TrainingJob.objects.filter(pk=job.pk))
        return POLL
    return step


def look(job: TrainingJob) -> float | None:
    TrainingJob.objects.filter(pk=job.pk).update(next_check_at=None)
    return training.reconcile(job.pk)


def test_a_nudge_during_a_step_makes_its_next_look_immediate(monkeypatch):
    monkeypatch.setitem(training.STEPS, t.DOWNLOADING, waiting_step(nudge_meanwhile=True))
    job = downloading_job()

    assert look(job) == 0.0
    job.refresh_from_db()
    assert job.next_check_at <= timezone.now()
    assert job.lease_token == ""


def test_without_a_nudge_the_step_keeps_the_next_look_it_asked_for(monkeypatch):
    monkeypatch.setitem(training.STEPS, t.DOWNLOADING, waiting_step(nudge_meanwhile=False))
    job = downloading_job()

    assert look(job) == POLL
    job.refresh_from_db()
    assert job.next_check_at > timezone.now()


def test_a_message_for_a_nudged_resource_is_not_dropped_as_early(monkeypatch):
    monkeypatch.setitem(training.STEPS, t.DOWNLOADING, waiting_step(nudge_meanwhile=False))
    job = downloading_job()
    look(job)
    assert training.reconcile(job.pk) is None  # its look is a poll away: a duplicate, dropped

    assert leases.due_now(TrainingJob.objects.filter(pk=job.pk)) == [job.pk]

    assert training.reconcile(job.pk) == POLL  # the step ran
