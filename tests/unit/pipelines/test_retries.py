"""Retry policies over real rows (AWS docs, "Retry Policy for Pipeline Steps"; the JSON of
sagemaker.workflow.retry's StepRetryPolicy and SageMakerJobStepRetryPolicy): a job that failed
with an internal error is retried as a new job while MaxAttempts allows, IntervalSeconds ×
BackoffRate^n apart; ListPipelineExecutionSteps' AttemptCount counts the attempts. A failure no
policy names, or past the attempts, fails the step as before."""

from datetime import timedelta

from django.utils import timezone

from pipelines import retries, services
from pipelines.models import PipelineExecutionStep
from processing.models import ProcessingJob
from protocol.errors import ServiceError, ValidationException
from tests.unit.pipelines import sample
from tests.unit.pipelines.test_reconciler import CTX, end_processing, look, report, start  # noqa: F401
from training.models import TrainingJob

INTERNAL = {"ExceptionType": ["SageMaker.JOB_INTERNAL_ERROR"], "IntervalSeconds": 10, "BackoffRate": 3.0}


def prepare_with(*policies) -> dict:
    return {**sample.PREPARE, "RetryPolicies": list(policies)}


def fail_job(reason: str) -> None:
    ProcessingJob.objects.filter(processing_end_time__isnull=True).update(failure_reason=reason)
    ProcessingJob.objects.filter(processing_end_time__isnull=True).update(
        processing_job_status="Failed", processing_end_time=timezone.now()
    )


def due_now() -> None:
    PipelineExecutionStep.objects.update(retry_at=timezone.now())


def test_an_internal_error_is_retried_as_a_new_job_until_max_attempts(report):  # noqa: F811
    execution = start(steps=[prepare_with({**INTERNAL, "MaxAttempts": 2})])
    look(execution)
    fail_job("InternalServerError: the node n1 that ran it stopped sending heartbeats.")
    before = timezone.now()
    found = look(execution)["Prepare"]
    assert found["StepStatus"] == "Starting" and found["AttemptCount"] == 2
    row = execution.steps.get()
    assert before + timedelta(seconds=9) < row.retry_at <= timezone.now() + timedelta(seconds=10)
    assert look(execution)["Prepare"]["StepStatus"] == "Starting"  # not before its time
    assert ProcessingJob.objects.count() == 1

    due_now()
    found = look(execution)["Prepare"]
    second = ProcessingJob.objects.latest("pk")
    assert ProcessingJob.objects.count() == 2 and found["StepStatus"] == "Executing"
    assert found["Metadata"] == {"ProcessingJob": {"Arn": second.processing_job_arn}}
    fail_job("InternalServerError: again")
    look(execution)
    assert execution.steps.get().retry_at > timezone.now() + timedelta(seconds=29)  # 10 × 3^1

    due_now()
    look(execution)
    fail_job("InternalServerError: and again")
    found = look(execution)["Prepare"]  # two retries made: MaxAttempts reached
    assert found["StepStatus"] == "Failed" and found["AttemptCount"] == 3
    assert found["FailureReason"] == "InternalServerError: and again"
    assert execution.status == "Failed"
    assert len({job.processing_job_name for job in ProcessingJob.objects.all()}) == 3


def test_a_retried_step_that_succeeds_lets_the_execution_go_on(report):  # noqa: F811
    execution = start(steps=[prepare_with({**INTERNAL, "MaxAttempts": 1})])
    look(execution)
    fail_job("InternalServerError: once")
    look(execution)
    due_now()
    look(execution)
    end_processing()
    found = look(execution)["Prepare"]
    assert found["StepStatus"] == "Succeeded" and found["AttemptCount"] == 2
    look(execution)
    assert execution.status == "Succeeded"


def test_the_algorithms_own_failure_is_not_retried(report):  # noqa: F811
    execution = start(steps=[prepare_with({**INTERNAL, "MaxAttempts": 5})])
    look(execution)
    fail_job("AlgorithmError: exit 1")
    found = look(execution)["Prepare"]
    assert found["StepStatus"] == "Failed" and found["AttemptCount"] == 1


def test_expire_after_min_ends_the_retries(report):  # noqa: F811
    policy = {"ExceptionType": ["SageMaker.JOB_INTERNAL_ERROR"], "ExpireAfterMin": 1}
    execution = start(steps=[prepare_with(policy)])
    look(execution)
    PipelineExecutionStep.objects.update(start_time=timezone.now() - timedelta(minutes=2))
    fail_job("InternalServerError: late")
    assert look(execution)["Prepare"]["StepStatus"] == "Failed"


def test_what_each_exception_type_matches():
    assert retries.of_failure("InternalServerError: x") == retries.JOB_INTERNAL_ERROR
    assert retries.of_failure("InsufficientCapacity: y") == retries.CAPACITY_ERROR
    assert retries.of_failure("ResourceLimitExceeded: z") == retries.RESOURCE_LIMIT
    assert retries.of_failure("AlgorithmError: exit 1") is None
    limit = ServiceError("too many")
    limit.code, limit.status = "ResourceLimitExceeded", 400
    assert retries.of_call(limit) == retries.RESOURCE_LIMIT
    assert retries.of_call(ServiceError("boom")) == retries.SERVICE_FAULT  # InternalFailure, 500
    assert retries.of_call(ValidationException("bad")) is None


def test_a_retried_execution_runs_its_failed_step_again_and_goes_on(report):  # noqa: F811
    """RetryPipelineExecution: the succeeded step's job is kept, the failed one's is made anew."""
    execution = start({"Threshold": "0"})  # 0.9 >= 0: Check registers the model
    look(execution)
    end_processing()
    look(execution)
    TrainingJob.objects.update(
        training_job_status="Failed", failure_reason="AlgorithmError: oom", training_end_time=timezone.now()
    )
    look(execution)
    assert execution.status == "Failed"
    services.retry_execution(CTX, {"PipelineExecutionArn": execution.arn, "ClientRequestToken": "r" * 32})
    found = look(execution)
    assert found["Train"]["StepStatus"] == "Executing" and found["Train"]["AttemptCount"] == 2
    assert found["Prepare"]["AttemptCount"] == 1 and ProcessingJob.objects.count() == 1
    assert TrainingJob.objects.count() == 2
    TrainingJob.objects.filter(training_job_status="InProgress").update(
        training_job_status="Completed", training_end_time=timezone.now()
    )
    found = look(execution)
    assert found["Train"]["StepStatus"] == "Succeeded"
    assert found["Register-RegisterModel"]["StepStatus"] == "Succeeded"
    look(execution)
    assert execution.status == "Succeeded" and execution.failure_reason == ""
