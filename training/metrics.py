"""Training metrics: each `AlgorithmSpecification.MetricDefinitions` entry (a name and a regex)
is applied to every line a training container prints; a match's first group, read as a float,
is a point of that metric, stamped with the line's timestamp. The regexes were checked when the
job was created (training/requests.py)."""
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from logs import metrics as metric_store
from logs.models import MetricDatum
from training.models import TrainingJob

TRAINING_JOBS_NAMESPACE = "/aws/sagemaker/TrainingJobs"
# The CloudWatch dimension of a whole job's metrics (what the SageMaker SDK's TrainingJobAnalytics
# asks for); each host's are under `Host=<job>/algo-N` (logs/metrics.py).
TRAINING_JOB_DIMENSION = "TrainingJobName"


@dataclass(frozen=True)
class MetricDefinition:
    name: str
    pattern: re.Pattern


def metric_definitions(job: TrainingJob) -> list[MetricDefinition]:
    specs = job.request["AlgorithmSpecification"].get("MetricDefinitions", [])
    return [MetricDefinition(spec["Name"], re.compile(spec["Regex"])) for spec in specs]


def extract(
    definitions: Sequence[MetricDefinition], events: Sequence[tuple[int, str]]
) -> list[tuple[str, int, float]]:
    """(metric name, timestamp ms, value) for every definition that matches a line."""
    points = []
    for timestamp_ms, message in events:
        for definition in definitions:
            value = _value(definition.pattern, message)
            if value is not None:
                points.append((definition.name, timestamp_ms, value))
    return points


def _value(pattern: re.Pattern, message: str) -> float | None:
    match = pattern.search(message)
    if match is None:
        return None
    # A regex without a group yields the whole match rather than nothing.
    text = match.group(1) if pattern.groups else match.group(0)
    try:
        value = float(text)
    except (TypeError, ValueError):  # the group did not take part, or is not a number
        return None
    # CloudWatch refuses NaN and infinities, and JSON cannot carry them.
    return value if math.isfinite(value) else None


def series_key(job: TrainingJob) -> metric_store.SeriesKey:
    return metric_store.SeriesKey(job.account_id, job.region, TRAINING_JOBS_NAMESPACE, job.training_job_name)


@dataclass(frozen=True)
class TrainingMetrics:
    """Turns the lines one training host prints into points of the job's metrics."""

    job: TrainingJob
    host: str

    def record(self, events: Sequence[tuple[int, str]]) -> None:
        definitions = metric_definitions(self.job)
        if definitions:
            metric_store.put(series_key(self.job), self.host, extract(definitions, events))


def final_metric_data(job: TrainingJob) -> list[MetricDatum]:
    """The last point of each defined metric, in the order of the job's MetricDefinitions."""
    names = [definition.name for definition in metric_definitions(job)]
    return metric_store.latest(series_key(job), names) if names else []


def metric_points(job: TrainingJob, metric_name: str, limit: int) -> list[MetricDatum]:
    """The first `limit` points of one of the job's metrics, oldest first."""
    return metric_store.earliest(series_key(job), metric_name, limit)
