"""Step caching over real rows (AWS docs, "Caching pipeline steps": a step with
`CacheConfig.Enabled` reuses the most recent successful run of the step, by an earlier execution
of the same pipeline, whose arguments were the same, within `ExpireAfter`; botocore's
PipelineExecutionStep.CacheHitResult.SourcePipelineExecutionArn names that execution)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from pipelines import caching, services
from pipelines.models import PipelineExecutionStep
from processing.models import ProcessingJob
from protocol.errors import ValidationException
from tests.unit.pipelines import sample
from tests.unit.pipelines.test_reconciler import CTX, end_processing, look, report  # noqa: F401

CACHED_PREPARE = {**sample.PREPARE, "CacheConfig": {"Enabled": True, "ExpireAfter": "PT1H"}}


def create(prepare=CACHED_PREPARE) -> None:
    services.create_pipeline(
        CTX,
        {
            "PipelineName": "p1",
            "RoleArn": sample.ROLE,
            "PipelineDefinition": sample.text(Steps=[prepare]),
        },
    )


def run(token: str, greeting: str = "hi"):
    return services.start_execution(
        CTX,
        {
            "PipelineName": "p1",
            "ClientRequestToken": token * 32,
            "PipelineParameters": [{"Name": "Greeting", "Value": greeting}],
        },
    )


@pytest.fixture
def first(report):  # noqa: F811 - the fixture of test_reconciler
    create()
    execution = run("a")
    look(execution)
    end_processing()
    look(execution)
    assert execution.status == "Succeeded"
    return execution


def test_a_cached_step_reuses_the_earlier_executions_job(first):
    second = run("b")
    found = look(second)
    job = ProcessingJob.objects.get()  # no second job
    assert found["Prepare"]["StepStatus"] == "Succeeded"
    assert found["Prepare"]["CacheHitResult"] == {"SourcePipelineExecutionArn": first.arn}
    assert found["Prepare"]["Metadata"] == {"ProcessingJob": {"Arn": job.processing_job_arn}}
    look(second)
    assert second.status == "Succeeded"
    third = run("c")  # a hit on a hit names the execution whose job it is
    assert look(third)["Prepare"]["CacheHitResult"] == {"SourcePipelineExecutionArn": first.arn}


def test_other_arguments_miss_the_cache(first):
    found = look(run("b", greeting="bonjour"))  # the Environment differs
    assert found["Prepare"]["StepStatus"] == "Executing"
    assert found["Prepare"]["CacheHitResult"] is None
    assert ProcessingJob.objects.count() == 2


def test_a_run_older_than_expire_after_is_not_reused(first):
    PipelineExecutionStep.objects.update(end_time=first.end_time - timedelta(hours=2))
    assert look(run("b"))["Prepare"]["StepStatus"] == "Executing"


def test_a_failed_run_is_not_reused(report):  # noqa: F811
    create()
    execution = run("a")
    look(execution)
    end_processing("Failed")
    look(execution)
    assert look(run("b"))["Prepare"]["StepStatus"] == "Executing"


def test_a_step_without_cache_config_always_runs(report):  # noqa: F811
    create(sample.PREPARE)
    execution = run("a")
    look(execution)
    end_processing()
    look(execution)
    assert look(run("b"))["Prepare"]["StepStatus"] == "Executing"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("PT1H", timedelta(hours=1)),
        ("P30D", timedelta(days=30)),
        ("30dT5h", timedelta(days=30, hours=5)),
        ("T16m", timedelta(minutes=16)),
        ("P1Y2M", timedelta(days=425)),
        ("P", None),
        ("1 hour", None),
        (3600, None),
    ],
)
def test_expire_after_is_an_iso_8601_duration(text, expected):
    """The docs' examples: "30d", "5y", "T16m", "30dT5h"; the SDK's: "PT1H"."""
    assert caching.duration(text) == expected


def test_a_bad_expire_after_is_refused_at_create(db):
    bad = {**sample.PREPARE, "CacheConfig": {"Enabled": True, "ExpireAfter": "an hour"}}
    with pytest.raises(ValidationException, match="ExpireAfter 'an hour' is not an ISO 8601 duration"):
        create(bad)


def test_a_step_that_missed_and_made_its_job_keeps_it_after_a_crash(report):  # noqa: F811
    """Two executions at once both miss; once the first succeeded, the second's look that died
    after creating its job must find that job again, not leave it running for a cache hit."""
    create()
    first, second = run("a"), run("b")
    look(first)
    look(second)
    assert ProcessingJob.objects.count() == 2
    ProcessingJob.objects.filter(processing_job_name__contains=first.execution_id).update(
        processing_job_status="Completed", processing_end_time=timezone.now()
    )
    look(first)
    second.steps.update(status="Starting", metadata={})  # the look died after creating the job
    found = look(second)["Prepare"]
    assert found["StepStatus"] == "Executing" and found["CacheHitResult"] is None
    own = ProcessingJob.objects.get(processing_job_name__contains=second.execution_id)
    assert found["Metadata"] == {"ProcessingJob": {"Arn": own.processing_job_arn}}
