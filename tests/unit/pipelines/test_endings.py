"""A step's job that ends wakes its execution at once (reconcile/endings.py), instead of the
execution's next poll finding it up to SAGEPORT_POLL_INTERVAL_SECONDS later."""

from datetime import timedelta

import pytest
from django.utils import timezone

from pipelines import tasks
from pipelines.models import PipelineExecution
from processing import transitions as processing_transitions
from processing.models import ProcessingJob
from tests.unit.pipelines.test_reconciler import look, report, start  # noqa: F401 - report: a fixture


@pytest.fixture
def sent(monkeypatch):
    """The execution ids whose reconcile was enqueued."""
    found: list[int] = []
    monkeypatch.setattr(tasks.reconcile_pipeline_execution, "delay", found.append)
    return found


def _later(execution: PipelineExecution) -> None:
    """The execution's next look is a poll away, as while a step's job runs."""
    later = timezone.now() + timedelta(seconds=30)
    PipelineExecution.objects.filter(pk=execution.pk).update(next_check_at=later)


def test_a_steps_job_ending_makes_its_executions_next_look_due_now(
    report, sent, django_capture_on_commit_callbacks  # noqa: F811
):
    execution = start()
    look(execution)  # Prepare's processing job is made
    job = ProcessingJob.objects.get()
    _later(execution)
    with django_capture_on_commit_callbacks(execute=True):
        assert processing_transitions.transition(job, processing_transitions.DOWNLOADING)
    assert sent == []  # a job moving on but not ending wakes nobody
    with django_capture_on_commit_callbacks(execute=True):
        assert processing_transitions.transition(job, processing_transitions.FAILED)
    assert sent == [execution.pk]
    execution.refresh_from_db()
    assert execution.next_check_at <= timezone.now()  # the message is not dropped as early


def test_an_ending_no_running_execution_waits_on_wakes_nothing(report, sent):  # noqa: F811
    execution = start()
    look(execution)
    name = ProcessingJob.objects.get().processing_job_name
    tasks.nudge_for_resource("pipelines-elsewhere-Prepare-abcdef")  # a step of no execution
    tasks.nudge_for_resource("my-own-job")
    PipelineExecution.objects.filter(pk=execution.pk).update(status="Stopped")
    tasks.nudge_for_resource(name)  # its execution has ended
    assert sent == []
