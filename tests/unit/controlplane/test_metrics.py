"""/metrics in Prometheus text format: gauges read from the database at scrape time, request
counters that move with each API request, unauthenticated, never the AWS error page."""
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.unit.training.test_scheduler import make_job

pytestmark = pytest.mark.django_db


def scrape(client) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def jobs(samples, status: str, secondary: str) -> float:
    return samples.get(
        ("sageport_training_jobs", (("secondary_status", secondary), ("status", status))), 0.0
    )


def requests(samples, operation: str, status: str) -> float:
    key = ("sageport_api_request_seconds_count", (("operation", operation), ("status", status)))
    return samples.get(key, 0.0)


def test_jobs_by_status_are_counted_from_the_database(client):
    before = jobs(scrape(client), "InProgress", "Starting")
    make_job("ml.m5.large")
    make_job("ml.m5.large")

    assert jobs(scrape(client), "InProgress", "Starting") == before + 2


def test_api_requests_are_counted_by_operation_and_status(client):
    before = scrape(client)

    client.post("/", data="{}", content_type="application/x-amz-json-1.1",
                HTTP_X_AMZ_TARGET="SageMaker.ListTrainingJobs")
    client.post("/", data="{}", content_type="application/x-amz-json-1.1",
                HTTP_X_AMZ_TARGET="SageMaker.NoSuchThing-" + "x" * 50)

    after = scrape(client)
    # Unsigned: refused, and counted under the operation it named.
    assert requests(after, "ListTrainingJobs", "403") == requests(before, "ListTrainingJobs", "403") + 1
    # A made-up operation is counted as "unknown": clients cannot grow the label set.
    assert requests(after, "unknown", "403") == requests(before, "unknown", "403") + 1
    assert not any("NoSuchThing" in str(labels) for _, labels in after)


def test_queue_depth_is_reported_per_queue_or_left_out_when_the_broker_is_down(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"  # nothing listens on the discard port

    samples = scrape(client)

    assert not any(name == "sageport_queue_depth" for name, _ in samples)
