"""A step's RetryPolicies, as the SageMaker Python SDK writes them (sagemaker.workflow.retry:
`{"ExceptionType": [...], "IntervalSeconds", "BackoffRate", "MaxAttempts" | "ExpireAfterMin"}`)
and as SageMaker documents them ("Retry Policy for Pipeline Steps"): the first policy naming the
kind of error a step met retries it, IntervalSeconds × BackoffRate^(retries so far) later, while
it has retried fewer than MaxAttempts times and ExpireAfterMin has not passed since the step
started. Every retry is a new job; the step's AttemptCount counts them.

What each exception type is here: Step.THROTTLING / Step.SERVICE_FAULT: the create call throttled
or failing on the service's side; SageMaker.RESOURCE_LIMIT: ResourceLimitExceeded, from the
create call or as the job's FailureReason (the job could not be placed); SageMaker.CAPACITY_ERROR:
a job that failed for want of capacity (InsufficientCapacity / CapacityError);
SageMaker.JOB_INTERNAL_ERROR: a job that failed with InternalServerError (the platform's fault)."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from protocol.errors import ServiceError

THROTTLING, SERVICE_FAULT = "Step.THROTTLING", "Step.SERVICE_FAULT"
JOB_INTERNAL_ERROR, CAPACITY_ERROR = "SageMaker.JOB_INTERNAL_ERROR", "SageMaker.CAPACITY_ERROR"
RESOURCE_LIMIT = "SageMaker.RESOURCE_LIMIT"
STEP_TYPES = (THROTTLING, SERVICE_FAULT)
JOB_TYPES = (JOB_INTERNAL_ERROR, CAPACITY_ERROR, RESOURCE_LIMIT)
# The SDK's bounds (sagemaker.workflow.retry: MAX_ATTEMPTS_CAP, MAX_EXPIRE_AFTER_MIN).
MAX_ATTEMPTS, MAX_EXPIRE_AFTER_MIN = 20, 14400
# A failed job's FailureReason prefix → its exception type.
_FAILURE_PREFIXES = {
    "InternalServerError": JOB_INTERNAL_ERROR,
    "InsufficientCapacity": CAPACITY_ERROR,
    "CapacityError": CAPACITY_ERROR,
    "ResourceLimitExceeded": RESOURCE_LIMIT,
}


@dataclass(frozen=True)
class RetryPolicy:
    exception_types: tuple[str, ...]
    interval_seconds: float = 1.0
    backoff_rate: float = 2.0
    max_attempts: int | None = None
    expire_after_min: int | None = None


def parse(raw: object, job_step: bool, problems: list[str]) -> tuple[RetryPolicy, ...]:
    """The policies in `raw`; what is wrong with them appended to `problems`. SageMaker.* types
    are for the steps that run a job (`job_step`)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append("RetryPolicies must be a list.")
        return ()
    found = []
    allowed = STEP_TYPES + JOB_TYPES if job_step else STEP_TYPES
    for item in raw:
        policy = _policy(item, allowed, problems)
        if policy is not None:
            found.append(policy)
    return tuple(found)


def _policy(item: object, allowed: tuple[str, ...], problems: list[str]) -> RetryPolicy | None:
    types = item.get("ExceptionType") if isinstance(item, dict) else None
    if not isinstance(types, list) or not types:
        problems.append(f"RetryPolicies: a policy needs a non-empty ExceptionType list: {str(item)[:200]}.")
        return None
    found: list[str] = []
    unknown = [kind for kind in types if kind not in allowed]
    if unknown:
        found.append(f"RetryPolicies: {', '.join(map(str, unknown))} not one of {', '.join(allowed)}.")
    numbers = {
        "IntervalSeconds": (item.get("IntervalSeconds", 1), 0, None),
        "BackoffRate": (item.get("BackoffRate", 2.0), 0, None),
        "MaxAttempts": (item.get("MaxAttempts"), 0, MAX_ATTEMPTS),
        "ExpireAfterMin": (item.get("ExpireAfterMin"), 0, MAX_EXPIRE_AFTER_MIN),
    }
    for member, (value, low, high) in numbers.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low:
            found.append(f"RetryPolicies: {member} must be a number of at least {low}, not {value!r}.")
        elif high is not None and value > high:
            found.append(f"RetryPolicies: {member} must be at most {high}, not {value!r}.")
    problems += found
    if found:
        return None
    return RetryPolicy(
        tuple(types),
        float(numbers["IntervalSeconds"][0]),
        float(numbers["BackoffRate"][0]),
        numbers["MaxAttempts"][0],
        numbers["ExpireAfterMin"][0],
    )


def of_call(exc: ServiceError) -> str | None:
    """The exception type of an error the step's create call got; None: not retryable."""
    if exc.code == "ResourceLimitExceeded":
        return RESOURCE_LIMIT
    if "Throttl" in exc.code:
        return THROTTLING
    return SERVICE_FAULT if exc.status >= 500 else None


def of_failure(reason: str) -> str | None:
    """The exception type of a job that failed with `reason`; None: the job's own fault."""
    for prefix, kind in _FAILURE_PREFIXES.items():
        if reason.startswith(prefix):
            return kind
    return None


def next_attempt(
    policies: tuple[RetryPolicy, ...], error: str | None, attempt_count: int, started: datetime
) -> datetime | None:
    """When the step's next attempt is due, or None when no policy retries it again."""
    policy = next((found for found in policies if error in found.exception_types), None)
    if policy is None:
        return None
    retries = attempt_count - 1
    now = timezone.now()
    if policy.max_attempts is not None and retries >= policy.max_attempts:
        return None
    if policy.expire_after_min is not None and now >= started + timedelta(minutes=policy.expire_after_min):
        return None
    return now + timedelta(seconds=policy.interval_seconds * policy.backoff_rate**retries)
